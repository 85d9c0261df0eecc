"""The retriever contract shared by the dense baseline and the GLM retriever.

Everything downstream (evaluation, the planner, serving) talks to a :class:`Retriever`, so
retrievers can be swapped by config. Retrieval is batched: a list of queries in, one result per
query out, in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

# What ask, serve and eval use when no retriever is named: the GLM shipped with hoprag fused with
# dense retrieval, the row that wins most of the benchmarks in docs/ (docs/glm.md, "Which recipe,
# measured where"; dense alone wins on HotpotQA and on MuSiQue's pooled setting).
DEFAULT_RETRIEVER = "packaged-glm+dense"


@dataclass(frozen=True)
class RetrievalQuery:
    """A question and, when known, its linked KG entities (normalized names)."""

    question: str
    question_entities: tuple[str, ...] = ()


@dataclass(frozen=True)
class RankedDocument:
    doc_id: int
    title: str
    score: float


@dataclass
class RetrievalResult:
    """Ranked documents (best first), scored entities where the retriever has them, and notes
    on fallbacks taken (e.g. no seed entity, so the dense baseline answered)."""

    documents: list[RankedDocument]
    entities: list[tuple[str, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@runtime_checkable
class Retriever(Protocol):
    """Ranks a KG index's documents for questions."""

    @property
    def name(self) -> str: ...

    def retrieve(self, queries: Sequence[RetrievalQuery], k: int) -> list[RetrievalResult]: ...
