"""Input problems located as a person reads a file: what was left out of a read, where and why.

Every reader (published formats and hoprag's own corpora) counts the items a file holds and
reports each one it does not read with its place (``line 3`` of a JSONL file, ``item 4`` of a JSON
list, ``row 7`` of a Parquet table), the field, the reason and the item's id when it has one, so
that read + problems = items. ``hoprag index`` prints the first ten and writes all of them to
``problems.jsonl`` beside the index's logs.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

# How many problems a summary lists one by one (all of them go to problems.jsonl), and how many a
# read keeps at all: a file of millions of broken items is counted, not held in memory.
SUMMARY_PROBLEMS = 10
MAX_RECORDED_PROBLEMS = 100_000


@dataclass(frozen=True)
class Where:
    """Where an item sits, as a person finds it: ``line N`` of a JSONL file, ``item N`` of a JSON
    list, ``entry N`` of a ``{title: text}`` object, ``row N`` of a Parquet table (1-based);
    ``index`` is the 0-based position (question ids of items without one use it)."""

    unit: str  # "line" | "item" | "entry" | "row"
    index: int
    file: str = ""  # named when a read spans several files (a raw directory, a HippoRAG 2 pair)

    def __str__(self) -> str:
        return f"{self.file + ' ' if self.file else ''}{self.unit} {self.index + 1}"


@dataclass(frozen=True)
class ItemProblem:
    """An item (or row) left out of the read: where, which field, why; the item's id when it has one."""

    where: Where
    field: str
    reason: str
    item_id: str | None = None

    def __str__(self) -> str:
        named = f" (id {self.item_id})" if self.item_id else ""
        return f"{self.where}{named}: {self.field}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "where": str(self.where),
            "id": self.item_id,
            "field": self.field,
            "reason": self.reason,
        }


@dataclass
class ReadReport:
    """Counts and the first :data:`MAX_RECORDED_PROBLEMS` problems of one read. ``items`` counts what
    the file holds (every JSONL line with content, every list entry); each is either read or a
    problem with ``skipped`` set."""

    items: int = 0
    questions: int = 0
    documents: int = 0  # documents read from rows ({title, text} corpora)
    skipped: int = 0
    unanswerable: int = 0  # MuSiQue "full": kept out of recall, counted here
    duplicates: int = 0  # items whose id an earlier item already had (the first is kept)
    bad_lines: int = 0  # JSONL lines that are not JSON (each also a problem)
    undecodable_lines: int = 0  # JSONL lines read with non-UTF-8 bytes replaced (kept)
    problems: list[ItemProblem] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)

    def problem(
        self, where: Where, field_name: str, reason: str, *, skipped: bool = True, item_id: str | None = None
    ) -> None:
        self.counts[f"{field_name}: {_kind(reason)}"] += 1
        if skipped:
            self.skipped += 1
        if len(self.problems) < MAX_RECORDED_PROBLEMS:
            self.problems.append(ItemProblem(where, field_name, reason, item_id))

    def lines(self) -> list[str]:
        """The report as text lines: the counts, the first :data:`SUMMARY_PROBLEMS` problems, then
        every problem kind with its count."""
        out = [
            f"{self.items} items read, {self.questions} questions kept, {self.skipped} skipped"
            + (f", {self.unanswerable} unanswerable (not scored for recall)" if self.unanswerable else "")
            + (f", {self.duplicates} duplicate ids (first kept)" if self.duplicates else "")
        ]
        out += [f"  {p}" for p in self.problems[:SUMMARY_PROBLEMS]]
        if sum(self.counts.values()) > min(len(self.problems), SUMMARY_PROBLEMS):
            out += [f"  {n} x {kind}" for kind, n in self.counts.most_common()]
        return out


def _kind(reason: str) -> str:
    """A problem's kind for counting: its reason without the quoted name or number that makes each
    one different ("title 'X' is not in ..." and "title 'Y' ..." are one kind)."""
    return re.sub(r"'[^']*'|\b\d+\b", "…", reason)
