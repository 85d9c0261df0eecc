"""Single-shot GLM-RAG question answering: retrieve once, answer in one LLM call.

The ``retrieve`` mode of the QA route (``plan`` is the PAI-2 planner). The question's KG entities
come from :class:`~hoprag.linking.linker.QuestionLinker`, the linking that built the index's
question links; the retriever (the trained GLM, or the dense baseline) ranks documents and scores
entities; the top documents' texts and the fact triples joining the top entities go into one
answer prompt. The result has the planner's :class:`~hoprag.planner.trace.Answer` shape, so both
modes are reported the same way. :meth:`RetrieveThenAnswer.retrieve` alone is what evaluation
scores as a retrieval system: the same links, the same retriever call.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from hoprag.linking.linker import EntityLinks, QuestionLinker
from hoprag.llm.base import LLM, Completion, Prompt, uses_student_prompt
from hoprag.planner import prompts as P
from hoprag.planner.knowledge import KnowledgeGraphView
from hoprag.planner.llm_calls import CachedLLM, CallLedger
from hoprag.planner.parsing import parse_answer
from hoprag.planner.planner import NOT_ENOUGH_INFO, PlannerInputError, check_question
from hoprag.planner.trace import Answer, ClueTrace, DocumentEvidence, StepTrace, TripleEvidence
from hoprag.planner.traversal.retriever import RetrieverTraversal
from hoprag.qa.config import RetrieveModeSettings
from hoprag.qa.system import QAMode, answer_one
from hoprag.retrieval.base import RetrievalQuery, RetrievalResult, Retriever


def answer_from_completion(prompt: Prompt, completion: Completion) -> tuple[str, str | None]:
    """The usable answer in one answer-prompt completion ("" if none) and, if unusable, why: an LLM
    error, an unparsable output, or an answer copied from the prompt's few-shot examples."""
    if not completion.ok:
        return "", f"LLM error {completion.error}"
    parsed = parse_answer(completion.text)
    if not parsed.ok:
        return "", parsed.reason
    if parsed.value and P.copied_from_examples(prompt, parsed.value):
        return "", "output copied from the prompt's examples"
    return parsed.value or "", None


@dataclass
class Retrieval:
    """One question's retrieval: its entity links and the retriever's result."""

    question: str
    links: EntityLinks
    result: RetrievalResult
    ledger: CallLedger = field(default_factory=CallLedger)  # the NER call, when one was made


class RetrieveThenAnswer:
    """GLM-RAG: one retrieval, one LLM call (thread-safe; the LLM cache is shared across questions)."""

    def __init__(
        self,
        kg: KnowledgeGraphView,
        retriever: Retriever,
        llm: LLM,
        linker: QuestionLinker,
        settings: RetrieveModeSettings | None = None,
        max_question_chars: int = 2000,
        cache_size: int = 4096,
    ) -> None:
        self.kg = kg
        self.retriever = retriever
        self.client = CachedLLM(llm, cache_size=cache_size)
        self.linker = linker
        self.settings = settings or RetrieveModeSettings()
        self.max_question_chars = max_question_chars
        self._traversal = RetrieverTraversal(kg, retriever, max_triples=self.settings.max_triples)

    @property
    def mode(self) -> QAMode:
        return "retrieve"

    def retrieve(self, questions: Sequence[str], k: int) -> list[Retrieval]:
        """Link every question, then one batched retriever call for the top ``k`` documents each."""
        texts = [check_question(q, self.max_question_chars) for q in questions]
        ledgers = [CallLedger() for _ in texts]
        links = self.linker.link(texts, ledgers)
        queries = [RetrievalQuery(t, link.entities) for t, link in zip(texts, links, strict=True)]
        results = self.retriever.retrieve(queries, k) if queries else []
        return [
            Retrieval(t, link, result, ledger)
            for t, link, result, ledger in zip(texts, links, results, ledgers, strict=True)
        ]

    def answer(self, question: str, top_k: int = 5) -> Answer:
        return answer_one(self, question, top_k)

    def answer_batch(self, questions: Sequence[str], top_k: int = 5) -> list[Answer | Exception]:
        started = time.perf_counter()
        outcomes: list[Answer | Exception | None] = [None] * len(questions)
        valid: list[int] = []
        for i, q in enumerate(questions):
            try:
                check_question(q, self.max_question_chars)
                valid.append(i)
            except PlannerInputError as exc:
                outcomes[i] = exc
        k = max(top_k, self.settings.context_documents)
        retrievals = self.retrieve([questions[i] for i in valid], k)
        steps = [self._step(r) for r in retrievals]
        specs = [
            P.answer_prompt(
                r.question,
                [t.text for t in step.clues[0].triples],
                self.client.prompt_style,
                self._context(step.clues[0].documents),
                student=uses_student_prompt(self.client.llm, "answer"),
            )
            for r, step in zip(retrievals, steps, strict=True)
        ]
        ledgers = [r.ledger for r in retrievals]
        completions = (
            self.client.complete_each([s.prompt for s in specs], specs[0].params, ledgers, "answer")
            if specs
            else []
        )
        for i, r, step, spec, completion in zip(valid, retrievals, steps, specs, completions, strict=True):
            answer, problem = answer_from_completion(spec.prompt, completion)
            if problem:
                step.degraded.append(f"answer: {problem}")
            step.answer = answer
            seconds = time.perf_counter() - started
            step.seconds = seconds
            clue = step.clues[0]
            outcomes[i] = Answer(
                question=r.question,
                answer=answer or NOT_ENOUGH_INFO,
                not_enough_info=not answer,
                steps=[step],
                plans=[],
                documents=clue.documents[:top_k],
                triples=clue.triples,
                seconds=seconds,
                **r.ledger.answer_fields(),
                notes=list(clue.notes),
            )
        return [o for o in outcomes if o is not None]

    def _step(self, retrieval: Retrieval) -> StepTrace:
        """The trace of the retrieval: seeds (and the linker that found each), triples, documents."""
        links = retrieval.links
        seeds = tuple(i for name in links.entities if (i := self.kg.index.entity_id(name)) is not None)
        knowledge = self._traversal.knowledge(seeds, retrieval.result)
        triples = [
            TripleEvidence(*self.kg.triple_parts(t.triple_id), round(t.score, 6), t.source, t.triple_id)
            for t in knowledge.triples
        ]
        documents = [DocumentEvidence(d.doc_id, d.title, round(d.score, 6)) for d in knowledge.documents]
        clue = ClueTrace(
            query=retrieval.question,
            seeds=list(links.entities),
            how="step",
            triples=triples,
            documents=documents,
            notes=knowledge.notes,
        )
        return StepTrace(
            index=0,
            query=retrieval.question,
            entities=list(links.mentions) or list(links.entities),
            entity_source="linker",
            seed_sources=links.by_entity(),
            clues=[clue],
        )

    def _context(self, documents: Sequence[DocumentEvidence]) -> list[str]:
        texts = self.kg.index.documents.column("text")
        chars = self.settings.max_document_chars
        return [
            f"{d.title}: {texts[d.doc_id].as_py()[:chars]}"
            for d in documents[: self.settings.context_documents]
        ]
