"""Defensive parsers for the planner's LLM outputs.

Every parser returns a value *or* a reason string saying why the output was unusable; callers
record the reason in the trace and degrade that step (keep the old plan, treat the answer as
unknown), never the question.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from hoprag.planner import prompts as P
from hoprag.planner.prompts import UNKNOWN

if TYPE_CHECKING:
    from hoprag.llm.base import Completion, Prompt, PromptSpec
    from hoprag.planner.trace import StepTrace

_NUMBERED = re.compile(r"^\s*(\d{1,2})[.)]\s*(.+?)\s*$")
_FINAL = re.compile(r"^\s*final answer\s*:\s*(.*?)\s*$", re.IGNORECASE)
_ANSWER_PREFIX = re.compile(r"^\s*(?:final answer|answer|rewritten)\s*:\s*", re.IGNORECASE)
_UNKNOWN_FORMS = {
    UNKNOWN,
    "not enough info",
    "notenoughinfo",
    "<|notenoughtinfo|>",
    "<|notenoughinfo|>",
    "<|norelevantinfo|>",
    "none",
    "n/a",
    "no answer",
    "not known",
    "the facts do not say",
    "(none)",
}
MAX_STEPS_PARSED = 12
T = TypeVar("T")
MAX_ANSWER_CHARS = 200


@dataclass(frozen=True)
class Parsed(Generic[T]):
    """A parser's result: ``value`` when usable, else ``reason`` says why not."""

    value: T | None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.reason is None


def parse_steps(text: str) -> Parsed[list[str]]:
    """Numbered lines (``1. ...``) → steps; duplicates dropped, at most :data:`MAX_STEPS_PARSED`."""
    steps: list[str] = []
    for line in text.splitlines():
        m = _NUMBERED.match(line)
        if m and m.group(2) not in steps:
            steps.append(m.group(2))
    if not steps:
        return Parsed(None, "no numbered steps in the output")
    return Parsed(steps[:MAX_STEPS_PARSED])


def parse_answer(text: str) -> Parsed[str]:
    """A short answer; the value is ``""`` when the model says it does not know."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = _ANSWER_PREFIX.sub("", line).strip().strip("\"'“”").rstrip(".").strip().strip("\"'“”").strip()
    if not line:
        return Parsed(None, "empty answer")
    if len(line) > MAX_ANSWER_CHARS:
        return Parsed(None, "answer too long (runaway output)")
    if line.lower() in _UNKNOWN_FORMS:
        return Parsed("")
    return Parsed(line)


@dataclass(frozen=True)
class PlanUpdate:
    """The merged answerability + enhancement output: a final answer, or new remaining steps."""

    final_answer: str | None
    remaining: list[str] | None


def parse_update(text: str) -> Parsed[PlanUpdate]:
    for line in text.splitlines():
        m = _FINAL.match(line)
        if m:
            answer = parse_answer(m.group(1))
            if answer.ok and answer.value:
                return Parsed(PlanUpdate(answer.value, None))
            return Parsed(None, "final answer line without an answer")
    steps = parse_steps(text)
    if steps.ok:
        return Parsed(PlanUpdate(None, steps.value))
    return Parsed(None, "neither a final answer nor numbered steps")


def parse_yes_no(text: str) -> Parsed[bool]:
    word = (re.findall(r"[a-z]+", text.lower()) or [""])[0]
    if word in {"yes", "true"}:
        return Parsed(True)
    if word in {"no", "false"}:
        return Parsed(False)
    return Parsed(None, "neither yes nor no")


def parse_rewritten(text: str) -> Parsed[str]:
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = _ANSWER_PREFIX.sub("", line).strip()
    if not line or len(line) > 400 or line.lower().rstrip(".") in _UNKNOWN_FORMS:
        return Parsed(None, "no rewritten question")
    return Parsed(line)


_STRIPPED_ENDS = " \t\r\"'“”."
_PREFIX_WORDS = ("final answer", "answer", "rewritten")
_UNKNOWN_LOWER = tuple({form.lower() for form in _UNKNOWN_FORMS})


def answer_text_so_far(output: str) -> str:
    """The part of :func:`parse_answer`'s answer that an answer call's output so far already
    settles (streaming the answer while it is generated): the first line's text once it cannot
    still turn out to be an ``Answer:`` prefix or a "don't know" form, without a trailing run of
    quotes, dots and spaces that the parser may yet strip. Each result extends the previous one
    as the output grows, and ends as a prefix of the parsed answer (the same text, but for
    outputs the parser rejects: runaway lines, answers copied from the prompt's examples)."""
    text = output.lstrip()
    newline = text.find("\n")
    complete = newline >= 0
    line = text[:newline] if complete else text
    m = _ANSWER_PREFIX.match(line)
    if m:
        body = line[m.end() :]
    else:
        lowered = line.rstrip().lower()
        if not complete and any(word.startswith(lowered) for word in _PREFIX_WORDS):
            return ""  # "Answ", "Final answer" ...: could still be a prefix the parser drops
        body = line
    # Over-stripping a settled line is harmless: the rest of the answer is released at the end.
    body = body.lstrip(" \t\r\"'“”").rstrip(_STRIPPED_ENDS)
    lowered = body.lower()
    if any(form.startswith(lowered) for form in _UNKNOWN_LOWER):
        return ""  # "no", "not kn" ...: may end as NotEnoughInfo
    return body[:MAX_ANSWER_CHARS]


# -- completions of a batch of prompts ----------------------------------------------------------


def parse_completions(
    specs: Sequence[PromptSpec],
    completions: Sequence[Completion],
    purpose: str,
    parser: Callable[[str], Parsed[T]],
    step: StepTrace | None = None,
) -> list[T | None]:
    """Each completion parsed (``None`` where the call failed, the output was unusable or copied
    from the prompt's examples); the reason for each ``None`` is added to ``step.degraded``."""
    values: list[T | None] = []
    for spec, c in zip(specs, completions, strict=True):
        if not c.ok:
            reason = f"{purpose}: LLM error {c.error}"
            values.append(None)
        else:
            parsed = parser(c.text)
            reason = None if parsed.ok else f"{purpose}: {parsed.reason}"
            value = drop_copies(spec.prompt, parsed.value)
            if parsed.ok and value is None:
                reason = f"{purpose}: output copied from the prompt's examples"
            values.append(value)
        if reason and step is not None:
            step.degraded.append(reason)
    return values


def drop_copies(prompt: Prompt, value: T | None) -> T | None:
    """``None`` for an answer, or the steps minus those, copied from the prompt's examples (a step
    that names what only the examples name counts as copied)."""
    if isinstance(value, str):
        return None if P.copied_from_examples(prompt, value) else value
    if isinstance(value, list):
        kept = [
            s
            for s in value
            if not (
                isinstance(s, str) and (P.copied_from_examples(prompt, s) or P.names_example_only(prompt, s))
            )
        ]
        return kept or None  # type: ignore[return-value]
    if isinstance(value, PlanUpdate):
        if value.final_answer is not None:
            return None if P.copied_from_examples(prompt, value.final_answer) else value
        steps = drop_copies(prompt, value.remaining)
        return PlanUpdate(None, steps) if steps else None  # type: ignore[return-value]
    return value
