"""The house rules that keep the layout safe to change: import directions and documented commands.

- The core package ``hoprag/`` is the bottom layer: outside the command layer (``hoprag/cli/``) it
  never imports a stage package, not even inside a function.
- Every ``hoprag ...`` command shown in the README and docs/ parses with the current parser, so a
  renamed flag fails here instead of in a user's terminal (or a RayJob entrypoint).
"""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

import pytest

from hoprag.cli import build_parser, rewrite_argv

ROOT = Path(__file__).resolve().parents[2]
STAGES = {"indexing", "training", "distillation", "serving", "evaluation", "cluster"}
# Stage modules that may use the command layer: submit checks a command with hoprag's own parser.
CLI_USERS = {"cluster/submit.py"}


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports, at any depth (function-local imports included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def _python_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def test_the_core_never_imports_a_stage_package() -> None:
    upward = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in _python_files("hoprag")
        if "cli" not in path.relative_to(ROOT / "hoprag").parts[:1]
        for line, module in _imported_modules(path)
        if module.split(".")[0] in STAGES
    ]
    assert not upward, "upward imports from the core:\n" + "\n".join(upward)


def test_stage_packages_do_not_use_the_command_layer() -> None:
    users = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for stage in sorted(STAGES)
        for path in _python_files(stage)
        if str(path.relative_to(ROOT)) not in CLI_USERS
        for line, module in _imported_modules(path)
        if module == "hoprag.cli" or module.startswith("hoprag.cli.")
    ]
    assert not users, "stage modules importing hoprag.cli:\n" + "\n".join(users)


def test_the_import_walk_sees_function_local_imports(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from serving.run import start_app\n    import training.loop\n")
    assert [m for _, m in _imported_modules(source)] == ["serving.run", "training.loop"]


def _documented_commands() -> list[tuple[str, list[str]]]:
    """``(where, argv)`` for each ``hoprag`` command line in a ```bash block of the README or docs/."""
    commands = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for block in re.findall(r"```(?:bash|sh|console)\n(.*?)```", doc.read_text(encoding="utf-8"), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                # Optional parts are written [--flag value]: check them as if given.
                words = shlex.split(line.replace("[", "").replace("]", ""), comments=True)
                if words and words[0] in {"hoprag", ".venv/bin/hoprag"}:
                    commands.append((f"{doc.relative_to(ROOT)}: {line.strip()}", words[1:]))
    return commands


def test_the_docs_show_commands() -> None:
    assert len(_documented_commands()) >= 30


@pytest.mark.parametrize(
    ("where", "argv"), _documented_commands(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_every_documented_command_parses(where: str, argv: list[str]) -> None:
    try:
        build_parser().parse_args(rewrite_argv(argv))
    except SystemExit as exc:
        pytest.fail(f"{where} does not parse (exit {exc.code})")


def test_config_modules_import_no_heavy_framework() -> None:
    """Reading a config (to validate a YAML recipe, render a manifest, submit a job) needs no torch,
    transformers, Ray or DeepSpeed."""
    import subprocess
    import sys

    configs = [
        "training.config",
        "indexing.config",
        "evaluation.config",
        "serving.settings",
        "hoprag.planner.config",
    ]
    probe = (
        f"import sys; import {', '.join(configs)}; "
        "print([m for m in ('torch', 'transformers', 'ray', 'deepspeed') if m in sys.modules])"
    )
    run = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
