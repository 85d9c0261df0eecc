"""Which evidence a step's answer rests on: the triples, theses and passages that state it.

A step's answer is *cited* by an evidence text when the answer's words occur in it, in order, as
whole words (after :func:`~hoprag.text.normalize_entity`: case, punctuation and spacing do not
matter) and is about one of the step's entities where it has any (see :func:`cite`). An answer no evidence states was not found but guessed (a small model answers with a
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
    """The evidence items stating ``answer`` (in evidence order). With ``anchors`` (the step's
    entities: "Payment On Demand" for "Who directed Payment On Demand?"), only those *about* what
    the step asks: naming an anchor, or joining an entity that an item naming an anchor joins
    ("Curtis Bernhardt | born in | Worms" makes "Worms | city in | Germany" cite "Germany" for
    "What country is Curtis Bernhardt from?"; "Country Roads | certified by | RIAA" cites nothing
    for a step about "Country Man")."""
    stating = [c for c in evidence if states(c.text, answer)]
    names = [a for a in anchors if normalize_entity(a)]
    if not names:
        return stating
    anchored = [c for c in evidence if any(states(c.text, a) for a in names)]
    # the entities one hop from an anchor, other than the answer itself
    found = normalize_entity(answer)
    bridge = {normalize_entity(n) for c in anchored for n in c.names} - {found}
    return [
        c for c in stating if c in anchored or bridge & ({normalize_entity(n) for n in c.names} - {found})
    ]


def supported(answer: str, texts: Iterable[str]) -> bool:
    """Whether any of ``texts`` states ``answer``."""
    return any(states(t, answer) for t in texts)
