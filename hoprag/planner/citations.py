"""Which evidence a step's answer rests on: the triples, theses and passages that state it.

A step's answer is *cited* by an evidence text when the answer's words occur in it, in order, as
whole words (after :func:`~hoprag.text.normalize_entity`: case, punctuation and spacing do not
matter) and is connected to one of the step's entities where it has any (see :func:`cite`). An answer no evidence states was not found but guessed (a small model answers with a
name from the question, or from nowhere); the planner records such a step as having found
nothing instead. Yes/no answers compare facts rather than quote one and are not checked this way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hoprag.planner.answer_type import answer_kind, offers_alternatives
from hoprag.planner.trace import Citation, StepTrace
from hoprag.text import normalize_entity


def states(text: str, answer: str) -> bool:
    """Whether ``text`` contains ``answer`` as whole words (normalized)."""
    needle = normalize_entity(answer)
    return bool(needle) and f" {needle} " in f" {normalize_entity(text)} "


def cite(answer: str, evidence: Sequence[Citation], anchors: Sequence[str] = ()) -> list[Citation]:
    """The evidence items stating ``answer`` (in evidence order). With ``anchors`` (the step's
    entities: "Payment On Demand" for "Who directed Payment On Demand?"), only those *connected* to
    what the step asks: an item naming an anchor, or sharing an entity (other than the answer) with
    an item already connected, and so on. A step may ask several hops at once, so "Curtis Bernhardt |
    born in | Worms" then "Worms | city in | Germany" cite "Germany" for "What country is the
    director of Payment On Demand from?"; "Country Roads | certified by | RIAA", joined to nothing the
    step reached, cites nothing for a step about "Country Man"."""
    stating = [c for c in evidence if states(c.text, answer)]
    names = [a for a in anchors if normalize_entity(a)]
    if not names:
        return stating
    found = normalize_entity(answer)
    joins = [{normalize_entity(n) for n in c.names} - {found} for c in evidence]
    connected = [any(states(c.text, a) for a in names) for c in evidence]
    reached = {normalize_entity(a) for a in names}.union(
        *(j for j, ok in zip(joins, connected, strict=True) if ok)
    )
    grew = True
    while grew:
        grew = False
        for i, join in enumerate(joins):
            if not connected[i] and join & reached:
                connected[i] = grew = True
                reached |= join
    return [c for c, ok in zip(evidence, connected, strict=True) if ok and states(c.text, answer)]


def supported(answer: str, texts: Iterable[str]) -> bool:
    """Whether any of ``texts`` states ``answer``."""
    return any(states(t, answer) for t in texts)


def echoes(query: str, answer: str) -> bool:
    """Whether ``answer`` is named by the open question ``query`` that it answers ("Who plays
    Lemony Snicket in X?" → "Lemony Snicket"): a restatement, not a finding. A query offering
    alternatives ("Which came first, A or B?") names its answer and is not checked."""
    return answer_kind(query) == "open" and not offers_alternatives(query) and states(query, answer)


def bridge_answers(steps: Sequence[StepTrace]) -> set[str]:
    """The (normalized) answers of steps that a later step's query names: the intermediate entities
    a chain passed through ("Curtis Bernhardt" once "What country is Curtis Bernhardt from?" ran)."""
    return {
        normalize_entity(s.answer)
        for i, s in enumerate(steps)
        if s.answer and any(states(later.query, s.answer) for later in steps[i + 1 :])
    }


def final_supported(final: str, question: str, steps: Sequence[StepTrace]) -> str | None:
    """Why the search does not stand behind a final answer, or ``None`` when it does: a step's
    answer or cited evidence states it, or the question offers it ("A or B?"); an open question
    does not name it (:func:`echoes`: "Who married the publisher of The North Star?" → "The North
    Star"); and it is not an intermediate entity of the chain (:func:`bridge_answers`) that the
    question does not name, which answers an earlier hop, not the question."""
    if echoes(question, final):
        return "is named by the question it answers"
    texts = [*(s.answer for s in steps if s.answer), *(c.text for s in steps for c in s.citations)]
    if offers_alternatives(question):
        texts.append(question)
    if not supported(final, texts):
        return "is stated by none of the steps' cited evidence"
    if normalize_entity(final) in bridge_answers(steps) and not states(question, final):
        return "is an intermediate answer (a later step searched from it)"
    return None
