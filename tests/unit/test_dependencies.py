"""Every package hoprag imports is declared in pyproject.toml, so that a Ray or transformers release
that stops bringing it along cannot break hoprag; optional engines are imported lazily."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (
    "hoprag",
    "hoprag_cli",
    "benchmarks",
    "indexing",
    "training",
    "distillation",
    "serving",
    "evaluation",
    "cluster",
    "synthetic",
)


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(spec: str) -> str:
    return _normalized(re.split(r"[\s<>=!~\[;]", spec, maxsplit=1)[0])


def declared() -> tuple[set[str], dict[str, set[str]]]:
    """(main dependencies, extra -> its dependencies), as normalized distribution names."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    main = {_requirement_name(s) for s in project["dependencies"]}
    extras = {
        extra: {_requirement_name(s) for s in specs}
        for extra, specs in project["optional-dependencies"].items()
    }
    return main, extras


def third_party_imports(source: str) -> list[tuple[str, bool]]:
    """``(top-level module, imported at module level)`` for each import of a module that is neither
    the standard library nor one of hoprag's packages."""
    tree = ast.parse(source)
    top_level = {id(node) for node in tree.body} | {
        id(child) for node in tree.body if isinstance(node, ast.If | ast.Try) for child in ast.walk(node)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            module = name.split(".")[0]
            if module not in sys.stdlib_module_names and module not in PACKAGES and module != "__future__":
                found.append((module, id(node) in top_level))
    return found


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def distribution_of(module: str) -> str:
    """The distribution that provides ``module`` (for one not installed here, e.g. vllm on a CPU
    machine, its own name)."""
    names = _distributions().get(module)
    return _normalized(names[0]) if names else _normalized(module)


def test_every_direct_import_is_declared_and_extras_are_imported_lazily() -> None:
    main, extras = declared()
    optional = {name for extra, names in extras.items() if extra != "dev" for name in names} - main
    undeclared, eager = [], []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            where = str(path.relative_to(ROOT))
            for module, at_module_level in third_party_imports(path.read_text(encoding="utf-8")):
                dist = distribution_of(module)
                if dist not in main and dist not in optional:
                    undeclared.append(f"{where}: {module} ({dist})")
                elif dist in optional and at_module_level:
                    eager.append(f"{where}: {module} (extra-only, imported at module level)")
    assert not undeclared, "imported but not declared in pyproject.toml:\n" + "\n".join(
        sorted(set(undeclared))
    )
    assert not eager, "\n".join(sorted(set(eager)))


def test_the_check_sees_a_missing_declaration_and_an_eager_extra() -> None:
    source = (
        "import numpy\nimport os\nfrom hoprag.config import StrictModel\n"
        "try:\n    import vllm\nexcept ImportError:\n    vllm = None\n"
        "def f():\n    import not_a_declared_package\n"
    )
    imports = third_party_imports(source)
    assert imports == [("numpy", True), ("vllm", True), ("not_a_declared_package", False)]
    main, extras = declared()
    assert distribution_of("not_a_declared_package") not in main | {n for e in extras.values() for n in e}
    assert distribution_of("yaml") == "pyyaml" and "pyyaml" in main
    assert "vllm" in extras["vllm"] and "vllm" not in main
