"""Input files as they come: plain, gzip or bzip2 (streamed), with or without a UTF-8 byte-order mark.

A compressed file is recognised by its first bytes, not only its name, so ``train.json.gz`` and a
gzip file someone named ``train.json`` both read. The *logical* suffix (``.jsonl`` of
``dev.jsonl.gz``) decides how the content is parsed.
"""

from __future__ import annotations

import bz2
import gzip
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from indexing.problems import ReadReport, Where

_GZIP_MAGIC = b"\x1f\x8b"
_BZIP2_LEVELS = tuple(str(n).encode() for n in range(1, 10))
_BZIP2_BLOCKS = (b"1AY&SY", b"\x17rE8P\x90")
_COMPRESSED_SUFFIXES = (".gz", ".bz2")
UTF8_BOM = b"\xef\xbb\xbf"


def logical_suffix(path: Path) -> str:
    """The suffix that says how a file's content is laid out: ``.jsonl`` for ``x.jsonl.gz``."""
    suffixes = path.suffixes
    if suffixes and suffixes[-1] in _COMPRESSED_SUFFIXES:
        return suffixes[-2] if len(suffixes) > 1 else ""
    return path.suffix


def compression(path: Path) -> str | None:
    """``"gzip"``, ``"bzip2"`` or ``None``, read from the file's first bytes."""
    with path.open("rb") as handle:
        head = handle.read(10)
    if head.startswith(_GZIP_MAGIC):
        return "gzip"
    # "BZh", the block size digit, then the magic of a first block (or of the end of an empty stream)
    if head[:3] == b"BZh" and head[3:4] in _BZIP2_LEVELS and head[4:10] in _BZIP2_BLOCKS:
        return "bzip2"
    return None


@contextmanager
def open_input(path: Path) -> Iterator[BinaryIO]:
    """``path``'s content as a buffered binary stream: decompressed on the fly, a leading UTF-8
    byte-order mark skipped (``json`` and ``ijson`` refuse it)."""
    kind = compression(path)
    opener = gzip.open if kind == "gzip" else bz2.open if kind == "bzip2" else open
    with opener(path, "rb") as handle:  # buffered, all three: peek() sees the head unread
        if handle.peek(len(UTF8_BOM))[: len(UTF8_BOM)] == UTF8_BOM:
            handle.read(len(UTF8_BOM))
        yield handle  # type: ignore[misc]


def jsonl_items(path: Path, report: ReadReport, file: str = "") -> Iterator[tuple[Where, Any]]:
    """``(where, value)`` of every non-blank line of a JSONL file, ``line N`` from 1. ``report``
    counts the lines (``items``); a line that is not JSON is a skipped problem (``bad_lines``), and
    a line with bytes that are not UTF-8 is read with them replaced (``undecodable_lines``)."""
    with open_input(path) as handle:
        for index, raw in enumerate(handle):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                report.undecodable_lines += 1
                line = raw.decode("utf-8", errors="replace")
            if not line.strip():
                continue
            where = Where("line", index, file)
            report.items += 1
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                report.bad_lines += 1
                report.problem(where, "line", f"not JSON ({exc.msg})")
                continue
            yield where, value


def read_bytes(path: Path) -> bytes:
    """The whole (decompressed, BOM-less) content: for the small ``{title: text}`` corpus files."""
    with open_input(path) as handle:
        return handle.read()


def head_text(path: Path, size: int = 4096) -> str:
    """The first ``size`` bytes of the content as text, leading whitespace dropped."""
    with open_input(path) as handle:
        return handle.read(size).decode("utf-8", errors="replace").lstrip(" \t\r\n")
