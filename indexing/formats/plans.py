"""Gold search plans of the published benchmarks, in the planner's format.

A question record's ``plan`` (:mod:`hoprag.planner.gold`: ``[{step, answer, ref}]``) teaches the
planner's ``plan`` and ``update`` prompts (``hoprag distill``). ``hoprag generate`` writes one from
each question's reasoning chain; the published benchmarks state their chains in their own ways:

- **MuSiQue** ``question_decomposition`` (read as ``decomposition``): sub-questions in order, each
  with its answer. A sub-question is free text ("who sings home alone tonight with #1") or a
  Wikidata hop ``SUBJECT >> relation`` ("#1 >> spouse"); ``#k`` names step *k*'s answer. A hop
  becomes "What is the spouse of ...?" (:func:`hop_step`); ``#k`` becomes step *k*'s
  ``[placeholder]``.
- **2WikiMultihopQA** ``evidences``: ``[subject, relation, object]`` facts in chain order. Each
  fact is one step "What is the RELATION of SUBJECT?"; a fact whose subject is an earlier fact's
  object (names compared as gold facts are, :func:`indexing.formats.gold.names_match`, loosely:
  "Charles Miller (director)" is "Charles Miller") names it by that step's placeholder. A
  comparison question's facts form two chains, one per compared thing, as the generator's gold
  plans of comparison questions do.

A placeholder is the description of what its step finds ("[the performer of Country Man]"), the
planner's convention: the description of a step that names an earlier placeholder carries its
words without brackets ("[the spouse of the creator of Ruby Loftus]"). HotpotQA states no chain
(its supporting facts are sentences), so its questions get no plan.
"""

from __future__ import annotations

import re
from typing import Any

from indexing.formats.gold import WIKIDATA_HOP, names_match, normalize_argument

_STEP_REFERENCE = re.compile(r"#(\d+)")
# Wikidata property labels that read badly in a question, as the verb phrase they mean.
_RELATION_READINGS = {
    "located in the administrative territorial entity": "located in",
    "shares border with": "bordered by",
}
# "Who is the performer of X?" -> "the performer of X"
_COPULA_QUESTION = re.compile(
    r"^(?:who|what|which|where)\s+(?:is|was|are|were)\s+(?P<rest>(?:the|a|an)\s+.+)$", re.IGNORECASE
)
# "who sings X" -> "the person who sings X"
_WHO_QUESTION = re.compile(r"^who\s+(?P<rest>(?!is\b|was\b|are\b|were\b)\w.*)$", re.IGNORECASE)


def published_plan(question: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A read question's gold plan from its MuSiQue ``decomposition`` or 2Wiki ``evidences``
    (module docstring), or ``None`` when it states no chain of two or more steps with answers."""
    if question.get("evidences"):
        return plan_from_evidences(question["evidences"])
    if question.get("decomposition"):
        return plan_from_decomposition(question["decomposition"])
    return None


def published_steps(question: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The steps of a read question's gold plan (:func:`published_plan`) as questions of their own,
    each earlier step's ``[placeholder]`` filled with that step's answer, as the planner's plan
    enhancement fills it ("What is the spouse of [the performer of Country Man]?" → "What is the
    spouse of Luke Bryan?"): ``[{question, answer, supporting_facts}]``, the paragraphs that state
    the step's answer (MuSiQue: the step's supporting paragraph; 2Wiki: the supporting paragraphs
    named like the fact's subject, else all of the question's). ``None`` without a plan."""
    plan = published_plan(question)
    if plan is None:
        return None
    supporting = [str(t) for t in question.get("supporting_facts") or []]
    if question.get("evidences"):
        supports = [
            [t for t in supporting if _same_name(t, str(fact[0]))] or supporting
            for fact in question["evidences"]
        ]
    else:
        supports = [
            [str(s["document"])] if s.get("document") else supporting for s in question["decomposition"]
        ]
    out: list[dict[str, Any]] = []
    filled: list[tuple[str, str]] = []
    for step, titles in zip(plan, supports, strict=True):
        text = step["step"]
        for placeholder, answer in filled:
            text = text.replace(placeholder, answer)
        out.append({"question": text, "answer": step["answer"], "supporting_facts": titles})
        if step["ref"]:
            filled.append((step["ref"], step["answer"]))
    return out


def plan_from_decomposition(steps: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """MuSiQue sub-questions (``[{question, answer}]``, ``#k`` naming step *k*) as a gold plan."""
    if len(steps) < 2:
        return None
    texts = [str(s.get("question") or "").strip() for s in steps]
    answers = [str(s.get("answer") or "").strip() for s in steps]
    if not all(texts) or not all(answers):
        return None
    referenced = {int(k) - 1 for t in texts for k in _STEP_REFERENCE.findall(t)}
    descriptions: list[str] = []
    plan: list[dict[str, Any]] = []
    for k, text in enumerate(texts):
        if any(not 0 <= int(j) - 1 < k for j in _STEP_REFERENCE.findall(text)):
            return None  # names itself or a later step: not a chain

        def inline(match: re.Match[str], bracket: bool) -> str:
            description = descriptions[int(match.group(1)) - 1]
            return f"[{description}]" if bracket else description

        hop = WIKIDATA_HOP.match(text)
        if hop and "#" in hop["relation"]:
            return None
        if hop:
            subject = hop["subject"].strip()
            step, description = hop_step(
                hop["relation"],
                _STEP_REFERENCE.sub(lambda m: inline(m, True), subject),
                _STEP_REFERENCE.sub(lambda m: inline(m, False), subject),
            )
        else:
            step = _as_question(_STEP_REFERENCE.sub(lambda m: inline(m, True), text))
            description = _description(_STEP_REFERENCE.sub(lambda m: inline(m, False), text))
        descriptions.append(description)
        plan.append(
            {"step": step, "answer": answers[k], "ref": f"[{description}]" if k in referenced else None}
        )
    return plan


def plan_from_evidences(evidences: list[Any]) -> list[dict[str, Any]] | None:
    """2Wiki ``[subject, relation, object]`` facts as a gold plan (module docstring)."""
    facts = [
        tuple(str(x).strip() for x in e) for e in evidences if isinstance(e, (list, tuple)) and len(e) == 3
    ]
    if len(facts) < 2 or len(facts) != len(evidences) or not all(all(f) for f in facts):
        return None
    sources: list[int | None] = []
    for k, (subject, _, _) in enumerate(facts):
        earlier = [j for j in range(k) if _same_name(facts[j][2], subject)]
        sources.append(earlier[-1] if earlier else None)
    referenced = {j for j in sources if j is not None}
    descriptions: list[str] = []
    plan: list[dict[str, Any]] = []
    for k, (subject, relation, obj) in enumerate(facts):
        source = sources[k]
        named = subject if source is None else descriptions[source]
        shown = subject if source is None else f"[{descriptions[source]}]"
        step, description = hop_step(relation, shown, named)
        descriptions.append(description)
        plan.append(
            {
                "step": step,
                "answer": obj,
                "ref": f"[{descriptions[k]}]" if k in referenced else None,
            }
        )
    return plan


def hop_step(relation: str, subject: str, named: str) -> tuple[str, str]:
    """A Wikidata hop as a step and the description of what it finds: "What is the spouse of X?" /
    "the spouse of X"; a relation that starts with a participle reads as a verb phrase ("What is
    KTRP licensed to broadcast to?" / "what KTRP is licensed to broadcast to"). ``subject``: as the
    step shows it (an earlier step's ``[placeholder]``); ``named``: as a description names it."""
    relation = " ".join(relation.split())
    relation = _RELATION_READINGS.get(relation.lower(), relation)
    first = relation.split()[0].lower()
    if first.endswith("ed") and len(first) > 4:
        return f"What is {subject} {relation}?", f"what {named} is {relation}"
    return f"What is the {relation} of {subject}?", f"the {relation} of {named}"


def _same_name(a: str, b: str) -> bool:
    return names_match(normalize_argument(a), normalize_argument(b), loose=True)


def _as_question(text: str) -> str:
    text = " ".join(text.split()).removesuffix(" ?")
    text = text[0].upper() + text[1:]
    return text if text.endswith("?") else f"{text}?"


def _description(question: str) -> str:
    """What a free-text sub-question finds, as a noun phrase where its form shows one ("Who is the
    performer of X?" → "the performer of X"; "who sings X" → "the person who sings X"), else "the
    answer to" the question."""
    text = " ".join(question.strip().rstrip("?").split())
    for pattern, template in ((_COPULA_QUESTION, "{rest}"), (_WHO_QUESTION, "the person who {rest}")):
        found = pattern.match(text)
        if found:
            return template.format(rest=found["rest"])
    return f"the answer to {text[0].lower()}{text[1:]}"
