"""What every QA mode checks a question with, and the answer that says none was found."""

from __future__ import annotations

NOT_ENOUGH_INFO = "NotEnoughInfo"


class PlannerInputError(ValueError):
    """A question the planner refuses (empty, or longer than ``max_question_chars``)."""


def check_question(question: str, max_chars: int) -> str:
    """The question whitespace-normalized, or :class:`PlannerInputError` when empty or too long
    (every QA mode checks questions with this)."""
    text = " ".join(question.split()) if isinstance(question, str) else ""
    if not text:
        raise PlannerInputError("the question is empty")
    if len(text) > max_chars:
        raise PlannerInputError(f"the question has {len(text)} characters; the limit is {max_chars}")
    return text


def normalize(text: str) -> str:
    """Lowercased with whitespace collapsed: how the planner compares steps with questions."""
    return " ".join(text.lower().split())
