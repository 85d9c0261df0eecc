# Self-bootstrapping entry points: the only prerequisite is Python >= 3.11.
#   make demo   – index the packaged sample corpus with the embedded models (no GPU/network/key)
#   make test   – lint + the whole test suite (what CI runs)
#   make test-fast – lint + the unit tests only (the inner loop; no Ray cluster)
#   make playground-screenshots – docs/img/playground-*.png from the playground's browser test
PYTHON ?= python3
VENV ?= .venv
# The CPU build of torch; set TORCH_SPEC='torch' (or a CUDA wheel) on GPU machines.
TORCH_SPEC ?= torch==2.13.0
BIN := $(VENV)/bin
STAMP := $(VENV)/.hoprag-installed

.PHONY: demo test test-fast lint install clean playground-screenshots

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "hoprag needs Python >= 3.11 (found %s); set PYTHON=python3.11" % sys.version.split()[0])'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/hoprag demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Two pytest-xdist workers, each running whole test files (module fixtures stay shared); the 20
# slowest tests are listed at the end. TEST_WORKERS=0 runs in one process (docs/testing.md).
TEST_WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -q -rs -n $(TEST_WORKERS) --dist loadfile
test: lint
	$(PYTEST) --durations=20

# The inner loop (about a minute): the unit tests, no Ray cluster; not a substitute for `make test`.
test-fast: lint
	$(PYTEST) --durations=10 tests/unit

# docs/img/playground-{desktop,phone}.png: the playground answering a plan question in headless Chromium.
playground-screenshots: $(STAMP)
	HOPRAG_PLAYGROUND_SCREENSHOTS=docs/img $(BIN)/python -m pytest tests/integration/test_serving.py -q -rs -s -k playground

clean:
	rm -rf $(VENV) runs .pytest_cache
