"""Plan enhancement without an LLM call: a later step's ``[placeholder]`` replaced by the answer of
the earlier step it names (PAI-2 §III: "What country is [director of Payment On Demand] from?"
becomes "What country is Curtis Bernhardt from?" once step 1 found Curtis Bernhardt).

A placeholder names its step by its words ("[director of Payment On Demand]" ↔ "Who is the
director of Payment On Demand?") or by number ("[answer 1]", "[step 1]", "[1]"). The earlier step
whose query holds the largest share of the placeholder's content words (at least half) is the
one; on a tie the latest. When that step found nothing, the placeholder's words stay in the step
without brackets (the step then searches for "the director of Payment On Demand" itself), so a
missing answer never turns into a guess. Placeholders that name no earlier step are left for the
LLM's update call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from hoprag.planner.answer_type import AUXILIARY_VERBS, QUESTION_WORDS
from hoprag.planner.prompts import PLACEHOLDER
from hoprag.text import normalize_entity

_STEP_NUMBER = re.compile(r"^(?:(?:answer|result|step)\s*(?:of|to|from)?\s*(?:step\s*)?)?#?(\d+)$")
_FUNCTION_WORDS = (
    QUESTION_WORDS
    | AUXILIARY_VERBS
    | {
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "and",
        "or",
        "that",
        "this",
    }
    | {"answer", "step"}
)
UNKNOWN_ANSWERS = frozenset({"", "unknown", "notenoughinfo"})


@dataclass
class Filled:
    """The remaining steps after enhancement, and what could not be filled."""

    steps: list[str]
    unresolved: list[str] = field(default_factory=list)  # placeholders naming no earlier step
    not_found: list[str] = field(default_factory=list)  # placeholders whose step found nothing


def _content_words(text: str) -> set[str]:
    return {w for w in normalize_entity(text).split() if w not in _FUNCTION_WORDS}


def referenced_step(placeholder: str, queries: Sequence[str]) -> int | None:
    """The index in ``queries`` (the earlier steps, in plan order) of the step a placeholder
    names, or ``None``."""
    number = _STEP_NUMBER.match(normalize_entity(placeholder))
    if number:
        i = int(number.group(1)) - 1
        return i if 0 <= i < len(queries) else None
    words = _content_words(placeholder)
    if not words:
        return None
    best, best_share = None, 0.5
    for i, query in enumerate(queries):
        share = len(words & _content_words(query)) / len(words)
        if share >= best_share:
            best, best_share = i, share
    return best


def fill_placeholders(remaining: Sequence[str], found: Sequence[tuple[str, str]]) -> Filled:
    """``remaining`` with every placeholder that names an answered step replaced (see the module);
    a placeholder naming a step still to run stays for a later call, with the words of the
    placeholders filled before it replaced too: "[the spouse of the performer of Country Man]"
    becomes "[the spouse of Luke Bryan]" once "[the performer of Country Man]" is "Luke Bryan", so
    that it still names its step once that step runs as "What is the spouse of Luke Bryan?" (with
    its old words it would name the step that found Luke Bryan)."""
    out = Filled(steps=[])
    filled: dict[str, str] = {}  # placeholder words -> what they became, in this call
    for position, step in enumerate(remaining):
        earlier = [q for q, _ in found] + list(remaining[:position])
        out.steps.append(
            PLACEHOLDER.sub(lambda m, e=earlier: _fill(m.group(0)[1:-1], e, found, out, filled), step)
        )
    return out


def _fill(
    placeholder: str,
    earlier: Sequence[str],
    found: Sequence[tuple[str, str]],
    out: Filled,
    filled: dict[str, str],
) -> str:
    """What one placeholder becomes: the named step's answer, its own words when that step found
    nothing, or itself (bracketed, earlier fills applied to its words) when it names a step still
    to run or none."""
    i = referenced_step(placeholder, earlier)
    if i is None:
        out.unresolved.append(placeholder)
        return f"[{placeholder}]"
    if i >= len(found):  # names a step that has not run yet
        for words, became in filled.items():
            placeholder = placeholder.replace(words, became)
        return f"[{placeholder}]"
    answer = found[i][1].strip()
    if normalize_entity(answer).replace(" ", "") in UNKNOWN_ANSWERS:
        out.not_found.append(placeholder)
        filled[placeholder] = placeholder
        return placeholder
    filled[placeholder] = answer
    return answer
