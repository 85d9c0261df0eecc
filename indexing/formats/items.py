"""Reading question items one at a time (bounded memory), whatever the file's JSON layout.

A JSON list is parsed incrementally (``ijson``): HotpotQA's train file (90k questions, ~550 MB)
never sits in memory as one Python object. A JSONL line that is not JSON is reported and skipped;
a JSON list that breaks off mid-file keeps every item before the break and reports where it broke.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from indexing.formats.model import ReadReport


def iter_items(path: Path, report: ReadReport) -> Iterator[tuple[int, Any]]:
    """``(index, item)`` for every item of a JSON list or JSONL file."""
    if path.suffix == ".jsonl":
        yield from _jsonl_items(path, report)
    else:
        yield from _json_list_items(path, report)


def _jsonl_items(path: Path, report: ReadReport) -> Iterator[tuple[int, Any]]:
    with path.open("rb") as handle:
        for index, raw in enumerate(handle):
            line = raw.decode("utf-8", errors="replace").strip()
            if not line:
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                report.items += 1
                report.problem(index, "line", f"not JSON ({exc.msg})", skipped=True)
                continue
            yield index, item


def _json_list_items(path: Path, report: ReadReport) -> Iterator[tuple[int, Any]]:
    import ijson

    index = -1
    with path.open("rb") as handle:
        try:
            for index, item in enumerate(ijson.items(handle, "item", use_float=True)):
                yield index, item
        except ijson.JSONError as exc:
            report.problem(
                index + 1, "file", f"the JSON breaks off or is invalid here ({exc})", skipped=False
            )
    if index < 0 and not report.problems:
        first = _first_char(path)
        if first not in ("[", ""):
            report.problem(0, "file", "expected a JSON list of question items", skipped=False)


def _first_char(path: Path) -> str:
    with path.open("rb") as handle:
        head = handle.read(4096).decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    return head[:1]


def first_item(path: Path) -> Any:
    """The first item of a JSON list or JSONL file (``None`` when there is none, or when a
    ``.json`` file is not a list: a ``{title: text}`` corpus is not parsed through to find out)."""
    if path.suffix != ".jsonl" and _first_char(path) != "[":
        return None
    for _, item in iter_items(path, ReadReport()):
        return item
    return None
