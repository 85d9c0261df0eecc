"""Text utilities shared by indexing, question linking and retrieval."""

from __future__ import annotations

import hashlib
import re
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
    """Decode bytes leniently (bad UTF-8 becomes U+FFFD) and drop control characters except newlines."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    text = unicodedata.normalize("NFC", text)
    return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch)[0] != "C").strip()
