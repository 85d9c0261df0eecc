"""tests/support/timing_report.py: seconds per test file from a JUnit report (docs/testing.md)."""

from __future__ import annotations

from pathlib import Path

from tests.support.timing_report import markdown_table, seconds_per_file

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
<testcase classname="tests.integration.test_slow" name="test_a" time="10.5"/>
<testcase classname="tests.integration.test_slow" name="test_b" time="2.0"/>
<testcase classname="tests.unit.test_quick" name="test_c" time="0.25"/>
<testcase classname="tests.unit.test_other" name="test_d" time="0.5"/>
</testsuite></testsuites>
"""


def test_times_are_summed_per_file_and_listed_slowest_first(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(REPORT)
    per_file = seconds_per_file(report)
    assert per_file == {
        "tests/integration/test_slow.py": (12.5, 2),
        "tests/unit/test_quick.py": (0.25, 1),
        "tests/unit/test_other.py": (0.5, 1),
    }
    table = markdown_table(per_file, top=2).splitlines()
    assert table[2] == "| tests/integration/test_slow.py | 2 | 12.5 |"
    assert table[3] == "| tests/unit/test_other.py | 1 | 0.5 |"
    assert table[4] == "| (1 more files) | 1 | 0.2 |"  # the files past --top, together
    assert table[5] == "| **total** | 4 | 13.2 |"
