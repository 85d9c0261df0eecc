"""Gold search plans: a question's plan in the planner's format, and the plan updates a planner
would make along it.

A benchmark question record may carry ``plan``, a list of ``{step, answer, ref}`` (``hoprag generate``
writes one from each question's reasoning chain): ``step`` is a one-hop question, ``answer`` what it
finds, and ``ref`` the ``[description]`` by which later steps name that answer. Distillation teaches
the planner's ``plan`` and ``update`` prompts from it, and ``hoprag bench steps`` scores an LLM's
plans and updates against it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hoprag.planner.prompts import PLACEHOLDER, UNKNOWN


@dataclass(frozen=True)
class GoldStep:
    """One step of a gold plan: a one-hop question, what it finds, and the ``[placeholder]`` later
    steps name that answer by (``None`` when none does)."""

    step: str
    answer: str
    ref: str | None = None


@dataclass(frozen=True)
class UpdateState:
    """What a planner shows its update prompt after a step, and the right output.

    ``found``: (step as run, its answer) so far; ``remaining``: the steps still to run, as last
    rewritten; ``final_answer``: set after the last step, else ``rewritten``: the remaining steps
    with the found answers in place of their placeholders."""

    found: tuple[tuple[str, str], ...]
    remaining: tuple[str, ...]
    rewritten: tuple[str, ...] = ()
    final_answer: str | None = None


def gold_plan(record: dict[str, Any]) -> list[GoldStep] | None:
    """A question record's gold plan, or ``None`` when it has none or it is malformed (a step without
    text or answer, a step of several lines, a placeholder that names no earlier step)."""
    raw = record.get("plan")
    if not isinstance(raw, list) or not raw:
        return None
    steps: list[GoldStep] = []
    refs: set[str] = set()
    for item in raw:
        if not isinstance(item, dict):
            return None
        step = str(item.get("step") or "").strip()
        answer = str(item.get("answer") or "").strip()
        ref = item.get("ref")
        if not step or not answer or "\n" in step or any(p not in refs for p in PLACEHOLDER.findall(step)):
            return None
        if ref is not None:
            refs.add(str(ref))
        steps.append(GoldStep(step, answer, None if ref is None else str(ref)))
    return steps


def update_states(
    plan: Sequence[GoldStep], answer: str, unknown_step: int | None = None
) -> list[UpdateState]:
    """The update prompts a planner whose every step found its gold answer sends along ``plan``, at
    the points it sends them (``skip_needless_updates``: after a step only while a remaining step
    names a ``[placeholder]``, and after the last step), each with its right output.

    ``unknown_step``: that step (one whose answer later steps need) found nothing; its finding is
    ``unknown``, and the right rewrite replaces its placeholder by the description itself ("Who
    directed the film written by X?"), a question that still names what to search for."""
    current = [s.step for s in plan]
    filled: dict[str, str] = {}
    found: list[tuple[str, str]] = []
    states: list[UpdateState] = []
    for k, step in enumerate(plan):
        unknown = k == unknown_step and step.ref is not None
        found.append((current[k], UNKNOWN if unknown else step.answer))
        if step.ref is not None:
            filled[step.ref] = step.ref[1:-1] if unknown else step.answer
        remaining = current[k + 1 :]
        if remaining and not any(PLACEHOLDER.search(r) for r in remaining):
            continue
        if not remaining:
            states.append(UpdateState(tuple(found), (), final_answer=answer))
            continue
        rewritten = [PLACEHOLDER.sub(lambda m: filled.get(m.group(0), m.group(0)), r) for r in remaining]
        states.append(UpdateState(tuple(found), tuple(remaining), tuple(rewritten)))
        current = current[: k + 1] + rewritten
    return states
