"""Wall time per test file from a pytest JUnit XML report (docs/testing.md).

    python -m pytest --junitxml=runs/junit.xml ...
    python -m tests.support.timing_report runs/junit.xml [--top 40]

Each test case's time in the report is its setup + call + teardown, so a module-scoped fixture is
counted in the first test that uses it. Under ``pytest -n N`` the files run side by side: the sum
of the rows is then more than the run's wall time.
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def seconds_per_file(report: Path) -> dict[str, tuple[float, int]]:
    """``{test file: (seconds, test cases)}`` from a JUnit XML report."""
    seconds: dict[str, float] = defaultdict(float)
    cases: dict[str, int] = defaultdict(int)
    for case in ET.parse(report).iter("testcase"):
        module = case.get("classname", "")
        name = module.replace(".", "/") + ".py" if module else "(unknown)"
        seconds[name] += float(case.get("time", 0.0))
        cases[name] += 1
    return {name: (seconds[name], cases[name]) for name in seconds}


def markdown_table(per_file: dict[str, tuple[float, int]], top: int) -> str:
    """The ``top`` slowest files as a Markdown table, then the total."""
    rows = sorted(per_file.items(), key=lambda item: -item[1][0])
    lines = ["| file | tests | seconds |", "|---|---:|---:|"]
    lines += [f"| {name} | {n} | {s:.1f} |" for name, (s, n) in rows[:top]]
    rest = rows[top:]
    if rest:
        lines.append(
            f"| ({len(rest)} more files) | {sum(n for _, (_, n) in rest)} | {sum(s for _, (s, _) in rest):.1f} |"
        )
    lines.append(
        f"| **total** | {sum(n for _, n in per_file.values())} | {sum(s for s, _ in per_file.values()):.1f} |"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="a pytest --junitxml report")
    parser.add_argument("--top", type=int, default=40, help="files to list before the rest (default 40)")
    args = parser.parse_args()
    print(markdown_table(seconds_per_file(args.report), args.top))


if __name__ == "__main__":
    main()
