"""The retriever contract shared by the dense baseline and the GLM retriever.

Everything downstream (evaluation, the planner, serving) talks to a :class:`Retriever`, so
retrievers can be swapped by config. Retrieval is batched: a list of queries in, one result per
query out, in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

# What ask, serve and eval use when no retriever is named: dense retrieval, fused with the shipped
# GLM and PPR on the questions where those two agree (hoprag/retrieval/routing.py; measured in
# docs/ppr.md, "The default retriever": fitted on the real samples' train portions, it leads dense
# on 2Wiki, MuSiQue and the held-out synthetic set and trails it by 0.01 recall@5 on HotpotQA).
DEFAULT_RETRIEVER = "routed"


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
    """Ranked documents (best first), scored entities where the retriever has them, notes on
    fallbacks taken (e.g. no seed entity, so the dense baseline answered), and ``seeds``: the KG
    entities a retriever that picks its own started from (PPR's restart entities, found through
    the question's facts), for the trace and the playground's evidence graph."""

    documents: list[RankedDocument]
    entities: list[tuple[str, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seeds: list[str] = field(default_factory=list)


@runtime_checkable
class Retriever(Protocol):
    """Ranks a KG index's documents for questions."""

    @property
    def name(self) -> str: ...

    def retrieve(self, queries: Sequence[RetrievalQuery], k: int) -> list[RetrievalResult]: ...
