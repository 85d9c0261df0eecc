"""Readers for the published multi-hop QA formats: HotpotQA, 2WikiMultihopQA, MuSiQue and HippoRAG
2's release (:mod:`indexing.formats.reader`), beside hoprag's own inputs (:mod:`indexing.corpus`)."""

from indexing.formats.reader import (
    FORMATS,
    CorpusFormat,
    NothingToIndexError,
    detect_format,
    read_published,
)

__all__ = ["FORMATS", "CorpusFormat", "NothingToIndexError", "detect_format", "read_published"]
