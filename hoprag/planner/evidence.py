"""What a plan step is shown and what its answer rests on: the filtered triples, theses and
passages of its clue queries, the prompt's fact lines, and the citations of its answer."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hoprag.planner.answer_type import answer_kind
from hoprag.planner.citations import cite, echoes
from hoprag.planner.config import PlannerConfig
from hoprag.planner.knowledge import KnowledgeGraphView
from hoprag.planner.trace import (
    Citation,
    ClueTrace,
    DocumentEvidence,
    StepTrace,
    ThesisEvidence,
    TripleEvidence,
)
from hoprag.planner.traversal.base import ClueQuery, Knowledge
from hoprag.text import normalize_entity


class StepEvidence:
    """Filtering and citing for the planner's steps over one KG (stateless between calls)."""

    def __init__(self, kg: KnowledgeGraphView, config: PlannerConfig) -> None:
        self.kg = kg
        self.config = config

    def theses(self, knowledge: Knowledge) -> list[ThesisEvidence]:
        """The theses the traversals read, in their order, at most ``theses`` of them."""
        return [
            ThesisEvidence(self.kg.thesis_text(t.thesis_id), round(t.score, 6), t.source, t.thesis_id)
            for t in knowledge.theses[: self.config.theses]
        ]

    def cite(self, step: StepTrace, evidence: Sequence[Citation]) -> None:
        """Record the evidence stating the step's answer; an answer none of it states was guessed,
        and one its own open question names restates it: with ``require_citations`` such a step is
        recorded as having found nothing instead."""
        if not step.answer:  # "unknown" (or unusable output): the step says it found nothing
            step.found_nothing = True
            return
        if answer_kind(step.query) == "yes_no":
            return  # a comparison of facts quotes none of them
        if self.config.require_citations and echoes(step.query, step.answer):
            _found_nothing(step, "is named by the step's own question")
            return
        # anchors: the KG vertices the step's entities matched (a mention matching none anchors nothing)
        anchors = [*(m for m, hits in step.matches.items() if hits), *step.seed_sources]
        step.citations = cite(step.answer, evidence, anchors)
        if not step.citations and self.config.require_citations:
            _found_nothing(step, "is stated by none of the step's evidence")

    def shown(self, clues: Sequence[ClueTrace]) -> tuple[list[ThesisEvidence], list[TripleEvidence]]:
        """The theses and triples a step-answer prompt shows: the clue queries' theses (unique, at
        most ``theses``), then their triples (unique), together at most ``max_step_facts``."""
        theses = list({t.thesis_id: t for c in clues for t in c.theses}.values())[: self.config.theses]
        triples = list({t.triple_id: t for c in clues for t in c.triples}.values())
        cap = self.config.max_step_facts
        if cap:
            theses = theses[:cap]
            triples = triples[: max(0, cap - len(theses))]
        return theses, triples

    def facts(self, clues: Sequence[ClueTrace]) -> list[str]:
        """The fact lines of a step-answer prompt (:meth:`shown`): statements, then triples."""
        theses, triples = self.shown(clues)
        return list(dict.fromkeys([*(t.text for t in theses), *(t.text for t in triples)]))

    def citable(self, clues: Sequence[ClueTrace]) -> list[Citation]:
        """Everything a step's answer prompt shows, as citable items."""
        index = self.kg.index
        objects = index.theses.objects if index.theses is not None else None
        theses, triples = self.shown(clues)
        out = [
            Citation(
                "thesis",
                t.thesis_id,
                t.text,
                [index.entity_names[e] for e in objects[t.thesis_id]] if objects is not None else [],
            )
            for t in theses
        ]
        out += [
            Citation(
                "triple",
                t.triple_id,
                t.text,
                [
                    index.entity_names[int(index.head[t.triple_id])],
                    index.entity_names[int(index.tail[t.triple_id])],
                ],
            )
            for t in triples
        ]
        out += [
            Citation("document", d, text, [normalize_entity(index.document_titles[d])])
            for d, text in self.documents(clues)
        ]
        return out

    def triples(self, query: ClueQuery, knowledge: Knowledge) -> list[TripleEvidence]:
        """At most ``top_triples`` fact triples, ranked by fused similarity to the clue query."""
        by_id = {t.triple_id: t for t in knowledge.triples if self.kg.is_fact(t.triple_id)}
        if not by_id:
            return []
        ids = list(by_id)
        if len(ids) > self.config.top_triples:
            ranked = self.kg.search_triples(
                query.vector,
                query.text,
                self.config.top_triples,
                subset=np.array(ids),
                fetch=len(ids),
                weights=(0.9, 0.1),
            )
            ids = [t for t, _ in ranked]
        out = []
        for t in ids:
            head, rel, tail = self.kg.triple_parts(t)
            out.append(TripleEvidence(head, rel, tail, round(by_id[t].score, 6), by_id[t].source, t))
        return out

    def documents(self, clues: Sequence[ClueTrace]) -> list[tuple[int, str]]:
        """``(doc_id, "title: text")`` of the passages a step's answer prompt shows: the GLM
        traversal's top ``context_documents``, none with ``drop_episodes`` (the paper's filter)."""
        n = 0 if self.config.drop_episodes else self.config.context_documents
        if not n:
            return []
        doc_ids = list(dict.fromkeys(d.doc_id for c in clues for d in c.documents))[:n]
        texts = self.kg.index.documents.column("text")
        titles = self.kg.index.documents.column("title")
        limit = self.config.max_document_chars
        return [(d, f"{titles[d].as_py()}: {texts[d].as_py()[:limit]}") for d in doc_ids]

    def document_texts(self, clues: Sequence[ClueTrace]) -> list[str]:
        return [text for _, text in self.documents(clues)]

    def collect(self, steps: Sequence[StepTrace]) -> tuple[list[TripleEvidence], list[DocumentEvidence]]:
        """All triples used (first occurrence) and documents ranked by retriever score or triple provenance."""
        triples: dict[int, TripleEvidence] = {}
        for s in steps:
            for c in s.clues:
                for t in c.triples:
                    triples.setdefault(t.triple_id, t)
        scores: dict[int, float] = {}
        for s in steps:
            for c in s.clues:
                for d in c.documents:
                    scores[d.doc_id] = scores.get(d.doc_id, 0.0) + d.score
                for rank, t in enumerate(c.triples):
                    for d in self.kg.index.triple_doc_ids[t.triple_id]:
                        scores[d] = scores.get(d, 0.0) + 1.0 / (rank + 1)
        titles = self.kg.index.documents.column("title")
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
        return list(triples.values()), [
            DocumentEvidence(d, titles[d].as_py(), round(s, 6)) for d, s in ranked
        ]


def _found_nothing(step: StepTrace, why: str) -> None:
    """Record a step's answer as not found, with why in ``degraded``."""
    step.degraded.append(f"step_answer: {step.answer!r} {why}; recorded as not found")
    step.answer = ""
    step.found_nothing = True
