"""The structured record of one answered question: plans, steps, clue queries, evidence, LLM cost."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class TripleEvidence:
    head: str
    relation: str
    tail: str
    score: float
    source: str
    triple_id: int

    @property
    def text(self) -> str:
        return f"{self.head} | {self.relation} | {self.tail}"


@dataclass
class ThesisEvidence:
    """A memory-graph thesis (a statement of a passage) a step was shown."""

    text: str
    score: float
    source: str
    thesis_id: int


@dataclass
class Citation:
    """An evidence item a step's answer rests on (:mod:`hoprag.planner.citations`)."""

    kind: str  # "thesis", "triple" or "document"
    id: int
    text: str
    names: list[str] = field(default_factory=list)  # the KG entities it joins (normalized names)


@dataclass
class DocumentEvidence:
    doc_id: int
    title: str
    score: float


@dataclass
class ClueTrace:
    query: str
    seeds: list[str]
    how: str  # "step" (no vertex), "literal" (names substituted), "llm" (rewritten by the LLM)
    triples: list[TripleEvidence] = field(default_factory=list)
    documents: list[DocumentEvidence] = field(default_factory=list)
    theses: list[ThesisEvidence] = field(default_factory=list)
    answer: str | None = None  # paper-like mode only: the clue answer
    notes: list[str] = field(default_factory=list)


@dataclass
class StepTrace:
    index: int
    query: str
    entities: list[str] = field(default_factory=list)
    entity_source: str = ""  # "dictionary" or "llm" (plan steps); "linker" (retrieve mode)
    seed_sources: dict[str, str] = field(default_factory=dict)  # seed entity -> the linker that found it
    matches: dict[str, list[tuple[str, float, bool]]] = field(default_factory=dict)
    clues: list[ClueTrace] = field(default_factory=list)
    answer: str = ""
    # the evidence stating the answer; empty with found_nothing (no evidence, or none states it)
    citations: list[Citation] = field(default_factory=list)
    found_nothing: bool = False
    degraded: list[str] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class Answer:
    """The planner's answer to one question with its evidence, trace and cost."""

    question: str
    answer: str
    not_enough_info: bool
    steps: list[StepTrace]
    plans: list[list[str]]
    documents: list[DocumentEvidence]
    triples: list[TripleEvidence]
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    cache_hits: int
    calls_by_purpose: dict[str, int]
    seconds: float
    prompt_version: str
    llm_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    sub_answers: list[tuple[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def answer_from_dict(data: dict[str, Any]) -> Answer:
    """The inverse of :meth:`Answer.to_dict` (e.g. for a trace that came back over HTTP)."""
    steps = []
    for s in data.get("steps", []):
        clues = [
            ClueTrace(
                **{
                    **c,
                    "triples": [TripleEvidence(**t) for t in c.get("triples", [])],
                    "documents": [DocumentEvidence(**d) for d in c.get("documents", [])],
                    "theses": [ThesisEvidence(**t) for t in c.get("theses", [])],
                }
            )
            for c in s.get("clues", [])
        ]
        matches = {k: [tuple(m) for m in v] for k, v in s.get("matches", {}).items()}
        citations = [Citation(**c) for c in s.get("citations", [])]
        steps.append(StepTrace(**{**s, "clues": clues, "matches": matches, "citations": citations}))
    fields = {k: v for k, v in data.items() if k in Answer.__dataclass_fields__}
    return Answer(
        **{
            **fields,
            "steps": steps,
            "documents": [DocumentEvidence(**d) for d in data.get("documents", [])],
            "triples": [TripleEvidence(**t) for t in data.get("triples", [])],
            "sub_answers": [tuple(x) for x in data.get("sub_answers", [])],
        }
    )
