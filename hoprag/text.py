"""Text utilities shared by indexing, question linking and retrieval."""

from __future__ import annotations

import functools
import hashlib
import re
import sys
import unicodedata

_SPACES = re.compile(r"\s+")


def normalize_entity(text: str) -> str:
    """GFM-RAG's entity normalization, Unicode-aware: lowercase, non-alphanumerics to spaces, collapse.

    GFM-RAG keeps only ``[A-Za-z0-9 ]``; we keep every Unicode letter and digit so names such as
    "Zoë Åberg" are not erased.
    """
    text = unicodedata.normalize("NFKC", text).lower()
    kept = "".join(ch if ch.isalnum() else " " for ch in text)
    return _SPACES.sub(" ", kept).strip()


def content_hash(*parts: str) -> str:
    """A stable hex digest of the given strings (used as cache and document keys)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", errors="surrogatepass"))
        h.update(b"\x1f")
    return h.hexdigest()


def clean_document_text(text: str | bytes) -> str:
    """Decode bytes leniently (bad UTF-8 becomes U+FFFD), NFC-normalize, and drop every character
    of Unicode category C (control, format, surrogate, private use, unassigned) except newlines and
    tabs."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    text = unicodedata.normalize("NFC", text)
    if text.isprintable():  # nothing of category C (nor a separator but " "): the common case
        return text.strip()
    return _other_characters().sub("", text).strip()


@functools.cache
def _other_characters() -> re.Pattern[str]:
    """Runs of category-C characters other than tab and newline, as one regex character class
    (built once per process, ~0.4 s: a per-character Python loop over a 550 MB benchmark file's
    paragraphs took 90% of its read time)."""
    ranges: list[tuple[int, int]] = []
    start = None
    for code in range(sys.maxunicode + 2):
        other = code <= sys.maxunicode and code not in (9, 10) and unicodedata.category(chr(code))[0] == "C"
        if other and start is None:
            start = code
        elif not other and start is not None:
            ranges.append((start, code - 1))
            start = None
    spans = "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)
    return re.compile(f"[{spans}]+")


MAX_NGRAM = 8  # longest entity name, in words, that dictionary matching looks for


def dictionary_mentions(question: str, entity_lookup: dict[str, int]) -> list[str]:
    """KG entity names found in the question: longest normalized n-grams first, non-overlapping.

    Only spans that start entity-like in the question (capital letter or digit) count.
    """
    words = question.split()
    norm_words = [normalize_entity(w) for w in words]
    taken = [False] * len(words)
    found: list[str] = []
    for n in range(min(MAX_NGRAM, len(words)), 0, -1):
        for start in range(0, len(words) - n + 1):
            if any(taken[start : start + n]):
                continue
            first = words[start].lstrip("\"'“‘(")[:1]
            if not (first.isupper() or first.isdigit()):
                continue
            name = normalize_entity(" ".join(norm_words[start : start + n]))
            if name and name in entity_lookup:
                found.append(name)
                for j in range(start, start + n):
                    taken[j] = True
    return found
