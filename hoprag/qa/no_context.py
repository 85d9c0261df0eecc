"""The LLM alone, without retrieval: the evaluation baseline that shows what retrieval adds."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from hoprag.llm.base import LLM, Completion, Prompt
from hoprag.planner import prompts as P
from hoprag.planner.llm_calls import CachedLLM, CallLedger
from hoprag.planner.questions import NOT_ENOUGH_INFO, PlannerInputError, check_question
from hoprag.planner.trace import Answer, StepTrace
from hoprag.qa.retrieve import answer_from_completion
from hoprag.qa.system import QAMode, answer_one

if TYPE_CHECKING:
    from hoprag.qa.events import EventSink


class NoContextAnswer:
    """One final-answer call per question with no facts (batched across a batch of questions)."""

    def __init__(self, llm: LLM, max_question_chars: int = 2000, cache_size: int = 4096) -> None:
        self.client = CachedLLM(llm, cache_size=cache_size)
        self.max_question_chars = max_question_chars

    @property
    def mode(self) -> QAMode:
        return "no_context"

    def answer(self, question: str, top_k: int = 5, events: EventSink | None = None) -> Answer:
        """One question; with ``events``, the answer call is streamed (the same answer)."""
        if events is None:
            return answer_one(self, question, top_k)
        started = time.perf_counter()
        text = check_question(question, self.max_question_chars)
        spec = P.final_answer_prompt(text, [], self.client.prompt_style)
        ledger = CallLedger()
        completion = self.client.complete_streamed(
            spec.prompt, spec.params, ledger, "answer", events.answer_stream(text), events.cancel
        )
        answer = self._finish(text, spec.prompt, completion, ledger, started)
        events.finish(answer.answer)
        return answer

    def answer_batch(self, questions: Sequence[str], top_k: int = 5) -> list[Answer | Exception]:
        started = time.perf_counter()
        outcomes: list[Answer | Exception | None] = [None] * len(questions)
        valid: list[tuple[int, str]] = []
        for i, q in enumerate(questions):
            try:
                valid.append((i, check_question(q, self.max_question_chars)))
            except PlannerInputError as exc:
                outcomes[i] = exc
        specs = [P.final_answer_prompt(text, [], self.client.prompt_style) for _, text in valid]
        ledgers = [CallLedger() for _ in valid]
        completions = (
            self.client.complete_each([s.prompt for s in specs], specs[0].params, ledgers, "answer")
            if specs
            else []
        )
        for (i, text), spec, completion, ledger in zip(valid, specs, completions, ledgers, strict=True):
            outcomes[i] = self._finish(text, spec.prompt, completion, ledger, started)
        return [o for o in outcomes if o is not None]

    @staticmethod
    def _finish(
        text: str, prompt: Prompt, completion: Completion, ledger: CallLedger, started: float
    ) -> Answer:
        answer, problem = answer_from_completion(text, prompt, completion)
        step = StepTrace(index=0, query=text, answer=answer)
        if problem:
            step.degraded.append(f"answer: {problem}")
        return Answer(
            question=text,
            answer=answer or NOT_ENOUGH_INFO,
            not_enough_info=not answer,
            steps=[step],
            plans=[],
            documents=[],
            triples=[],
            seconds=time.perf_counter() - started,
            **ledger.answer_fields(),
        )
