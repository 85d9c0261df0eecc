"""Single-shot GLM-RAG question answering: retrieve once, answer in one LLM call.

The ``retrieve`` mode of the QA route (the ``plan`` mode is the PAI-2 planner). The question's KG
entities are found by dictionary matching (no LLM call); the retriever (the trained GLM, or the
dense baseline) ranks documents and scores entities; the top documents' texts and the fact
triples joining the top entities go into one answer prompt. The result has the planner's
:class:`~hoprag.planner.trace.Answer` shape, so both modes are reported the same way.
"""

from __future__ import annotations

import time

from hoprag.llm.base import LLM, Completion, Prompt
from hoprag.planner import prompts as P
from hoprag.planner.knowledge import KnowledgeGraphView
from hoprag.planner.llm_calls import CachedLLM, CallLedger
from hoprag.planner.parsing import parse_answer
from hoprag.planner.planner import NOT_ENOUGH_INFO, PlannerInputError
from hoprag.planner.trace import Answer, ClueTrace, DocumentEvidence, StepTrace, TripleEvidence
from hoprag.planner.traversal.base import ClueQuery
from hoprag.planner.traversal.retriever import RetrieverTraversal
from hoprag.retrieval.base import Retriever
from hoprag.text import dictionary_mentions


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


class RetrieveThenAnswer:
    """GLM-RAG: one retrieval, one LLM call (thread-safe; the LLM cache is shared across questions)."""

    def __init__(
        self,
        kg: KnowledgeGraphView,
        retriever: Retriever,
        llm: LLM | CachedLLM,
        context_documents: int = 3,
        max_document_chars: int = 600,
        max_triples: int = 25,
        max_question_chars: int = 2000,
    ) -> None:
        self.kg = kg
        self.retriever = retriever
        self.client = llm if isinstance(llm, CachedLLM) else CachedLLM(llm)
        self.context_documents = context_documents
        self.max_document_chars = max_document_chars
        self.max_triples = max_triples
        self.max_question_chars = max_question_chars
        self._lookup = {n: i for i, n in enumerate(kg.index.entity_names)}

    def answer(self, question: str, top_k: int = 5) -> Answer:
        question = " ".join((question or "").split())
        if not question:
            raise PlannerInputError("the question is empty")
        if len(question) > self.max_question_chars:
            raise PlannerInputError(
                f"the question has {len(question)} characters; the limit is {self.max_question_chars}"
            )
        started = time.perf_counter()
        ledger = CallLedger()
        step = StepTrace(index=0, query=question, entity_source="dictionary")
        mentions = dictionary_mentions(question, self._lookup)
        step.entities = mentions
        seeds = tuple(self._lookup[m] for m in mentions)
        traversal = RetrieverTraversal(
            self.kg,
            self.retriever,
            top_documents=max(top_k, self.context_documents),
            max_triples=self.max_triples,
        )
        knowledge = traversal.retrieve(ClueQuery(question, self.kg.embed([question])[0], seeds))
        triples = [
            TripleEvidence(*self.kg.triple_parts(t.triple_id), round(t.score, 6), t.source, t.triple_id)
            for t in knowledge.triples
        ]
        documents = [DocumentEvidence(d.doc_id, d.title, round(d.score, 6)) for d in knowledge.documents]
        clue = ClueTrace(
            query=question,
            seeds=list(mentions),
            how="step",
            triples=triples,
            documents=documents,
            notes=knowledge.notes,
        )
        step.clues = [clue]
        texts = self.kg.index.documents.column("text")
        context = [
            f"{d.title}: {texts[d.doc_id].as_py()[: self.max_document_chars]}"
            for d in documents[: self.context_documents]
        ]
        spec = P.answer_prompt(question, [t.text for t in triples], self.client.prompt_style, context)
        completion = self.client.complete([spec.prompt], spec.params, ledger, "answer")[0]
        answer, problem = answer_from_completion(spec.prompt, completion)
        if problem:
            step.degraded.append(f"answer: {problem}")
        step.answer = answer
        step.seconds = time.perf_counter() - started
        return Answer(
            question=question,
            answer=answer or NOT_ENOUGH_INFO,
            not_enough_info=not answer,
            steps=[step],
            plans=[],
            documents=documents[:top_k],
            triples=triples,
            seconds=time.perf_counter() - started,
            **ledger.answer_fields(),
            notes=list(knowledge.notes),
        )
