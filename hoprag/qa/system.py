"""The contract every QA mode implements: a question (or a batch) in, an ``Answer`` out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from hoprag.planner.trace import Answer

if TYPE_CHECKING:
    from hoprag.qa.events import EventSink

QAMode = Literal["retrieve", "plan", "no_context"]
QA_MODES: tuple[QAMode, ...] = ("retrieve", "plan", "no_context")


@runtime_checkable
class QASystem(Protocol):
    """Answers questions over one index (thread-safe: serving replicas share one instance)."""

    @property
    def mode(self) -> QAMode: ...

    def answer(self, question: str, top_k: int = 5, events: EventSink | None = None) -> Answer:
        """One question; raises :class:`~hoprag.planner.planner.PlannerInputError` for a question the
        system refuses (empty, too long), never for LLM or retrieval trouble (see ``Answer.notes``).
        With ``events``, the stages are reported and the final answer call is streamed as it runs
        (:mod:`hoprag.qa.events`); the answer is the same (timings aside)."""
        ...

    def answer_batch(self, questions: Sequence[str], top_k: int = 5) -> list[Answer | Exception]:
        """Several questions at once (batched where the mode can); a question that fails has its
        exception in its place, the others are unaffected."""
        ...


def answer_one(system: QASystem, question: str, top_k: int) -> Answer:
    """``system.answer`` for systems that answer through :meth:`QASystem.answer_batch`: the one
    question's answer, or its exception raised."""
    result = system.answer_batch([question], top_k)[0]
    if isinstance(result, Exception):
        raise result
    return result
