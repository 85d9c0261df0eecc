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
from typing import TYPE_CHECKING

from hoprag.linking.linker import EntityLinks, QuestionLinker
from hoprag.llm.base import LLM, TASK_ANSWER, Completion, Prompt, PromptSpec, uses_student_prompt
from hoprag.planner import prompts as P
from hoprag.planner.answer_type import fit_answer
from hoprag.planner.knowledge import KnowledgeGraphView
from hoprag.planner.llm_calls import CachedLLM, CallLedger
from hoprag.planner.parsing import parse_answer
from hoprag.planner.questions import NOT_ENOUGH_INFO, PlannerInputError, check_question
from hoprag.planner.trace import Answer, ClueTrace, DocumentEvidence, StepTrace, TripleEvidence
from hoprag.planner.traversal.retriever import RetrieverTraversal
from hoprag.qa.config import RetrieveModeSettings
from hoprag.qa.system import QAMode, answer_one
from hoprag.retrieval.base import RetrievalQuery, RetrievalResult, Retriever

if TYPE_CHECKING:
    from hoprag.qa.events import EventSink


def answer_from_completion(question: str, prompt: Prompt, completion: Completion) -> tuple[str, str | None]:
    """The usable answer to ``question`` in one answer-prompt completion ("" if none) and, if
    unusable, why: an LLM error, an unparsable output, an answer copied from the prompt's few-shot
    examples, or one of the wrong kind (:func:`~hoprag.planner.answer_type.fit_answer`)."""
    if not completion.ok:
        return "", f"LLM error {completion.error}"
    parsed = parse_answer(completion.text)
    if not parsed.ok:
        return "", parsed.reason
    if parsed.value and P.copied_from_examples(prompt, parsed.value):
        return "", "output copied from the prompt's examples"
    return fit_answer(question, parsed.value or "")


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

    def retrieve(self, questions: Sequence[str], k: int, events: EventSink | None = None) -> list[Retrieval]:
        """Link every question, then one batched retriever call for the top ``k`` documents each
        (``events``, for one question: its links are reported before the retrieval)."""
        texts = [check_question(q, self.max_question_chars) for q in questions]
        ledgers = [CallLedger() for _ in texts]
        links = self.linker.link(texts, ledgers)
        if events is not None:
            for text, link in zip(texts, links, strict=True):
                entities = list(link.mentions) or list(link.entities)
                events.stage("seeds", step=0, query=text, entities=entities, seeds=link.by_entity())
        queries = [RetrievalQuery(t, link.entities) for t, link in zip(texts, links, strict=True)]
        results = self.retriever.retrieve(queries, k) if queries else []
        return [
            Retrieval(t, link, result, ledger)
            for t, link, result, ledger in zip(texts, links, results, ledgers, strict=True)
        ]

    def answer(self, question: str, top_k: int = 5, events: EventSink | None = None) -> Answer:
        """One question; with ``events``, its stages are reported and the answer call is streamed
        (:mod:`hoprag.qa.events`), for the same answer."""
        if events is None:
            return answer_one(self, question, top_k)
        from hoprag.qa.events import documents_payload, triples_payload

        started = time.perf_counter()
        retrieval = self.retrieve([question], max(top_k, self.settings.context_documents), events)[0]
        step = self._step(retrieval)
        clue = step.clues[0]
        events.stage(
            "triples",
            step=0,
            triples=triples_payload(clue.triples),
            documents=documents_payload(clue.documents),
        )
        spec = self._prompt(retrieval, step)
        completion = self.client.complete_streamed(
            spec.prompt,
            spec.params,
            retrieval.ledger,
            "answer",
            events.answer_stream(retrieval.question),
            events.cancel,
        )
        answer = self._finish(retrieval, step, spec, completion, top_k, started)
        events.finish(answer.answer)
        return answer

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
        specs = [self._prompt(r, step) for r, step in zip(retrievals, steps, strict=True)]
        ledgers = [r.ledger for r in retrievals]
        completions = (
            self.client.complete_each([s.prompt for s in specs], specs[0].params, ledgers, "answer")
            if specs
            else []
        )
        for i, r, step, spec, completion in zip(valid, retrievals, steps, specs, completions, strict=True):
            outcomes[i] = self._finish(r, step, spec, completion, top_k, started)
        return [o for o in outcomes if o is not None]

    def _prompt(self, retrieval: Retrieval, step: StepTrace) -> PromptSpec:
        """The answer prompt over the retrieval's triples and top documents."""
        return P.answer_prompt(
            retrieval.question,
            [t.text for t in step.clues[0].triples],
            self.client.prompt_style,
            self._context(step.clues[0].documents),
            student=uses_student_prompt(self.client.llm, TASK_ANSWER),
        )

    @staticmethod
    def _finish(
        retrieval: Retrieval,
        step: StepTrace,
        spec: PromptSpec,
        completion: Completion,
        top_k: int,
        started: float,
    ) -> Answer:
        """The answer from the answer call's completion, with the retrieval's trace and cost."""
        answer, problem = answer_from_completion(retrieval.question, spec.prompt, completion)
        if problem:
            step.degraded.append(f"answer: {problem}")
        step.answer = answer
        seconds = time.perf_counter() - started
        step.seconds = seconds
        clue = step.clues[0]
        return Answer(
            question=retrieval.question,
            answer=answer or NOT_ENOUGH_INFO,
            not_enough_info=not answer,
            steps=[step],
            plans=[],
            documents=clue.documents[:top_k],
            triples=clue.triples,
            seconds=seconds,
            **retrieval.ledger.answer_fields(),
            notes=list(clue.notes),
        )

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
            # the linker's seeds, then those the retriever picked itself (PPR's, from the question's facts)
            seed_sources=links.by_entity()
            | {s: "retriever" for s in retrieval.result.seeds if s not in links.entities},
            clues=[clue],
        )

    def _context(self, documents: Sequence[DocumentEvidence]) -> list[str]:
        texts = self.kg.index.documents.column("text")
        chars = self.settings.max_document_chars
        return [
            f"{d.title}: {texts[d.doc_id].as_py()[:chars]}"
            for d in documents[: self.settings.context_documents]
        ]
