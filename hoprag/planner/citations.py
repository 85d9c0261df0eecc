"""Which evidence a step's answer rests on: the triples, theses and passages that state it.

A step's answer is *cited* by an evidence text when the answer's words occur in it, in order, as
whole words (after :func:`~hoprag.text.normalize_entity`: case, punctuation and spacing do not
matter). An answer no evidence states was not found but guessed (a small model answers with a
name from the question, or from nowhere); the planner records such a step as having found
nothing instead. Yes/no answers compare facts rather than quote one and are not checked this way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hoprag.planner.trace import Citation
from hoprag.text import normalize_entity


def states(text: str, answer: str) -> bool:
    """Whether ``text`` contains ``answer`` as whole words (normalized)."""
    needle = normalize_entity(answer)
    return bool(needle) and f" {needle} " in f" {normalize_entity(text)} "


def cite(answer: str, evidence: Sequence[Citation], anchors: Sequence[str] = ()) -> list[Citation]:
    """The evidence items stating ``answer`` (in evidence order); where some of them also name one
    of the step's ``anchors`` (its entities: "Payment On Demand" for "Who directed Payment On
    Demand?"), only those: they state the answer *about* what the step asks."""
    stating = [c for c in evidence if states(c.text, answer)]
    about = [c for c in stating if any(states(c.text, a) for a in anchors)]
    return about or stating


def supported(answer: str, texts: Iterable[str]) -> bool:
    """Whether any of ``texts`` states ``answer``."""
    return any(states(t, answer) for t in texts)
