"""The house rules that keep the layout safe to change: import directions and documented commands.

- Which top-level package may import which is the table in docs/architecture.md; every import of
  every module (function-local and ``TYPE_CHECKING`` ones included) must be an arrow it allows, and
  no modules import each other in a circle.
- No module is longer than 600 lines (tests and generated data aside).
- Every ``hoprag ...`` command shown in the README and docs/ parses with the current parser, so a
  renamed flag fails here instead of in a user's terminal (or a RayJob entrypoint).
"""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

import pytest

from hoprag_cli import build_parser, rewrite_argv

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
MAX_MODULE_LINES = 600


def allowed_imports() -> dict[str, set[str]]:
    """``package -> packages it may import``, read from the table in docs/architecture.md."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    table = text[text.index("<!-- layers:") : text.index("<!-- end of layers -->")]
    allowed: dict[str, set[str]] = {}
    for row in table.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            allowed[cells[0].strip("`")] = set(re.findall(r"`([a-z_]+)`", cells[2]))
    return allowed


def _imported_modules(path: Path, package: list[str] | None = None) -> list[tuple[int, str]]:
    """Every module ``path`` imports, at any depth (function-local imports included); relative
    imports resolved against ``package`` (default: the module's own package in the project)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    if package is None:
        package = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def _project_modules() -> dict[str, Path]:
    """``dotted name -> file`` of every module of the project's packages."""
    modules = {}
    for package in allowed_imports():
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The project module an imported name lives in (``a.b.func`` -> ``a.b``), or None."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    """``module -> project modules it imports``."""
    modules = _project_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = {_resolve(imported, modules) for _, imported in _imported_modules(path)}
        graph[name] = {t for t in targets if t is not None and t != name}
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_the_architecture_table_names_every_top_level_package() -> None:
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests"}
    assert set(allowed_imports()) == packages
    assert allowed_imports()["hoprag"] == set()  # the core is the ground floor


def test_every_import_is_an_arrow_the_architecture_allows() -> None:
    allowed = allowed_imports()
    wrong = []
    for package, may_import in allowed.items():
        for path in sorted((ROOT / package).rglob("*.py")):
            where = str(path.relative_to(ROOT))
            for line, module in _imported_modules(path):
                top = module.split(".")[0]
                if top in allowed and top != package and top not in may_import:
                    wrong.append(f"{where}:{line} imports {module} ({package} may not import {top})")
    assert not wrong, "imports docs/architecture.md does not allow:\n" + "\n".join(wrong)


def test_no_modules_import_each_other_in_a_circle() -> None:
    circles = import_circles(import_graph())
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_the_import_walk_sees_function_local_and_relative_imports(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from serving.run import start_app\n    import training.loop\n")
    assert [m for _, m in _imported_modules(source, [])] == ["serving.run.start_app", "training.loop"]
    source.write_text("from . import qa\nfrom .ingress import app\nfrom ..settings import QAAppSettings\n")
    assert [m for _, m in _imported_modules(source, ["serving", "deployments"])] == [
        "serving.deployments.qa",
        "serving.deployments.ingress.app",
        "serving.settings.QAAppSettings",
    ]


def test_the_circle_finder_finds_circles_and_only_circles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_circles(graph) == [["a", "b", "c"]]
    assert import_circles({"a": {"b"}, "b": set()}) == []


def test_no_module_is_over_600_lines() -> None:
    too_long = []
    for package in allowed_imports():
        for path in sorted((ROOT / package).rglob("*.py")):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > MAX_MODULE_LINES:
                too_long.append(f"{path.relative_to(ROOT)}: {lines} lines")
    assert not too_long, "split these modules along their responsibilities:\n" + "\n".join(too_long)


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
