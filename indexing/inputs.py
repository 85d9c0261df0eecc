"""Input files as they come: plain, gzip or bzip2 (streamed), with or without a UTF-8 byte-order mark.

A compressed file is recognised by its first bytes, not only its name, so ``train.json.gz`` and a
gzip file someone named ``train.json`` both read. The *logical* suffix (``.jsonl`` of
``dev.jsonl.gz``) decides how the content is parsed.
"""

from __future__ import annotations

import bz2
import gzip
import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

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


class _SkipBOM(io.RawIOBase):
    """A binary stream without a leading UTF-8 byte-order mark (``json`` and ``ijson`` refuse it)."""

    def __init__(self, inner: BinaryIO) -> None:
        self._inner = inner
        head = inner.read(len(UTF8_BOM))
        self._pending = b"" if head == UTF8_BOM else head

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        if self._pending:
            n = min(len(view), len(self._pending))
            view[:n] = self._pending[:n]
            self._pending = self._pending[n:]
            return n
        data = self._inner.read(len(view))
        view[: len(data)] = data
        return len(data)


@contextmanager
def open_input(path: Path) -> Iterator[BinaryIO]:
    """``path``'s content as a buffered binary stream: decompressed on the fly, without a BOM."""
    kind = compression(path)
    opener = gzip.open if kind == "gzip" else bz2.open if kind == "bzip2" else open
    with opener(path, "rb") as raw:
        yield io.BufferedReader(_SkipBOM(raw), buffer_size=1 << 16)  # type: ignore[arg-type]


def read_bytes(path: Path) -> bytes:
    """The whole (decompressed, BOM-less) content: for the small ``{title: text}`` corpus files."""
    with open_input(path) as handle:
        return handle.read()


def head_text(path: Path, size: int = 4096) -> str:
    """The first ``size`` bytes of the content as text, leading whitespace dropped."""
    with open_input(path) as handle:
        return handle.read(size).decode("utf-8", errors="replace").lstrip(" \t\r\n")
