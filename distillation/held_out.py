"""Paragraph titles no student may be taught from (``held_out_titles`` of a distill config).

Held-out real questions are measured over the leading entries of the 2Wiki corpus file, so no
paragraph of those entries may enter a student's training data, whether it comes from the corpus
being distilled or from a gold source; nor may a paragraph a test question of the distilled corpus
needs. The guard is applied where training data is chosen, not where the teacher labels (a
labelled set may hold every paragraph).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from distillation.config import HeldOutTitles
from indexing.corpus import Document


class HeldOutTitlesError(ValueError):
    """A held-out titles file that cannot be read as a corpus of titled entries."""


def held_out_titles(specs: Sequence[HeldOutTitles]) -> frozenset[str]:
    """The titles of every spec's first ``first`` entries (a spec's file shorter than that: all of it)."""
    titles: set[str] = set()
    for spec in specs:
        titles.update(_leading_titles(spec.path, spec.first))
    return frozenset(titles)


def teachable_documents(
    documents: Sequence[Document],
    specs: Sequence[HeldOutTitles],
    test_questions: Sequence[dict[str, Any]] = (),
) -> list[Document]:
    """``documents`` in their order, without those whose title the specs hold out and those a test
    question needs (its ``supporting_facts`` titles: test text stays out of training)."""
    held_out = held_out_titles(specs) | {t for q in test_questions for t in q.get("supporting_facts") or []}
    return [d for d in documents if d.title not in held_out]


def _leading_titles(path: Path, first: int) -> list[str]:
    if not path.is_file():
        raise HeldOutTitlesError(f"held_out_titles: {path} is not a file")
    text = path.read_text(encoding="utf-8-sig")
    rows: Iterable[Any]
    try:
        rows = json.loads(text)
    except ValueError:
        try:
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError as error:
            raise HeldOutTitlesError(f"held_out_titles: {path} is neither JSON nor JSONL ({error})") from None
    if not isinstance(rows, list):
        raise HeldOutTitlesError(f"held_out_titles: {path} holds no list of entries")
    titles = []
    for number, row in enumerate(rows[:first], 1):
        if not isinstance(row, dict) or not isinstance(row.get("title"), str):
            raise HeldOutTitlesError(f"held_out_titles: entry {number} of {path} has no string 'title'")
        titles.append(row["title"])
    return titles
