"""What every published-format reader produces: paragraphs pooled into documents, questions that
name their gold and candidate documents, and the items that could not be read.

Paragraph identity is title **and** text: MuSiQue gives different paragraphs one title (e.g. two
"Green" paragraphs), so a document's key is its title, made unique with a ``" (2)"``, ``" (3)"``, ...
suffix for the second and later distinct texts under one title. The same paragraph met again (2Wiki
and HotpotQA repeat them across questions) is one document.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hoprag.text import clean_document_text
from indexing.problems import ReadReport, Where

__all__ = [
    "ParagraphPool",
    "PendingQuestion",
    "ReadReport",
    "Where",
    "item_id",
    "item_question",
    "paragraph_text",
]

PendingQuestion = Callable[["ParagraphPool"], dict[str, Any]]
"""A validated question item: called with the pool, it pools the item's paragraphs and returns the
question (readers validate an item whole before any of it is read)."""


def paragraph_text(sentences: list[Any]) -> str:
    """A paragraph from its sentences: each stripped and joined with one space (HippoRAG 2's 2Wiki
    corpus is exactly this; HotpotQA's sentences carry their own leading spaces)."""
    return " ".join(s.strip() for s in sentences if isinstance(s, str) and s.strip())


def _identity(title: str, text: str) -> tuple[str, str]:
    return title, " ".join(text.split())  # whitespace differences do not make another paragraph


@dataclass
class ParagraphPool:
    """Documents de-duplicated by title and text, keyed by a unique title (module docstring)."""

    documents: dict[str, str] = field(default_factory=dict)  # key -> text, in first-seen order
    _keys: dict[tuple[str, str], str] = field(default_factory=dict)
    _by_title: dict[str, list[str]] = field(default_factory=dict)  # title -> its documents' keys

    def add(self, title: str, text: str) -> str:
        """The key of the document holding this paragraph (added when new)."""
        title = clean_document_text(title).replace("\n", " ")
        text = clean_document_text(text)
        identity = _identity(title, text)
        found = self._keys.get(identity)
        if found is not None:
            return found
        same_title = self._by_title.setdefault(title, [])
        count = len(same_title) + 1
        key = title if count == 1 else f"{title} ({count})"
        while key in self.documents:  # a real title that already reads "X (2)"
            count += 1
            key = f"{title} ({count})"
        same_title.append(key)
        self._keys[identity] = key
        self.documents[key] = text
        return key

    def key_of(self, title: str, text: str) -> str | None:
        """The key of an already pooled paragraph, or ``None``."""
        return self._keys.get(
            _identity(clean_document_text(title).replace("\n", " "), clean_document_text(text))
        )

    def keys_titled(self, title: str) -> list[str]:
        """Every pooled document whose paragraph has this title (more than one in MuSiQue)."""
        return list(self._by_title.get(clean_document_text(title).replace("\n", " "), ()))


def item_id(item: Any) -> str | None:
    """An item's own id (``_id`` in HotpotQA / 2Wiki, ``id`` elsewhere), when it has one."""
    if not isinstance(item, dict):
        return None
    value = item.get("_id", item.get("id"))
    return str(value) if isinstance(value, str | int) and str(value) else None


def item_question(item: Any, where: Where, report: ReadReport) -> str | None:
    """An item's question text, stripped; ``None`` (reported, item skipped) when the item is not
    an object or has no question."""
    if not isinstance(item, dict):
        report.problem(where, "item", "not a JSON object")
        return None
    question = item.get("question")
    if not isinstance(question, str) or not question.strip():
        report.problem(where, "question", "missing or empty", item_id=item_id(item))
        return None
    return question.strip()
