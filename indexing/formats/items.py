"""Reading items one at a time (bounded memory), whatever the file's JSON layout or compression.

A JSON list is parsed incrementally (``ijson``): HotpotQA's train file (90k questions, ~550 MB),
or a list written on one huge line, never sits in memory as one Python object. Files may be gzip or
bzip2 compressed and start with a UTF-8 byte-order mark (:mod:`indexing.inputs`). Each item
comes with its place as a person finds it (:class:`~indexing.formats.model.Where`): ``line N`` of a
JSONL file, ``item N`` of a JSON list. A JSONL line that is not JSON is reported and skipped; a
JSON list that breaks off mid-file keeps every item before the break and reports where it broke.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from indexing.inputs import head_text, jsonl_items, logical_suffix, open_input
from indexing.problems import ReadReport, Where


def iter_items(path: Path, report: ReadReport, name_file: bool = False) -> Iterator[tuple[Where, Any]]:
    """``(where, item)`` for every item of a JSON list or JSONL file; ``report.items`` counts them
    (a JSONL line that is not JSON too, reported as a skipped problem). ``name_file``: places name
    the file (a read of several files)."""
    file = path.name if name_file else ""
    if logical_suffix(path) == ".jsonl":
        yield from jsonl_items(path, report, file)
    else:
        yield from _json_list_items(path, report, file)


def _json_list_items(path: Path, report: ReadReport, file: str) -> Iterator[tuple[Where, Any]]:
    import ijson

    index = -1
    with open_input(path) as handle:
        try:
            for index, item in enumerate(ijson.items(handle, "item", use_float=True)):
                report.items += 1
                yield Where("item", index, file), item
        except ijson.JSONError as exc:
            report.problem(
                Where("item", index + 1, file),
                "file",
                f"the JSON breaks off or is invalid here ({exc})",
                skipped=False,
            )
    if index < 0 and not report.problems:
        first = head_text(path)[:1]
        if first not in ("[", ""):
            report.problem(Where("item", 0, file), "file", "expected a JSON list of items", skipped=False)


def first_item(path: Path) -> Any:
    """The first item of a JSON list or JSONL file (``None`` when there is none, or when a
    ``.json`` file is not a list: a ``{title: text}`` corpus is not parsed through to find out)."""
    if logical_suffix(path) != ".jsonl" and head_text(path)[:1] != "[":
        return None
    for _, item in iter_items(path, ReadReport()):
        return item
    return None
