"""Retrieval and QA metrics as the papers define them."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

from hoprag.retrieval.metrics import recall_at_k

__all__ = ["entity_recall", "exact_match", "f1_score", "normalize_answer", "recall_at_k", "step_recall"]


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """HotpotQA / SQuAD answer normalization: lowercase, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, answers: Sequence[str]) -> float:
    """1.0 when the normalized prediction equals any normalized gold answer (or alias), else 0.0."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(a) for a in answers if a))


def f1_score(prediction: str, answers: Sequence[str]) -> float:
    """Token F1 (HotpotQA): best over the gold answers; yes/no/noanswer must match exactly."""
    best = 0.0
    pred = normalize_answer(prediction)
    for answer in answers:
        gold = normalize_answer(answer)
        if not gold:
            continue
        if pred in _SPECIAL or gold in _SPECIAL:
            best = max(best, float(pred == gold))
            continue
        p_tokens, g_tokens = pred.split(), gold.split()
        common = Counter(p_tokens) & Counter(g_tokens)
        same = sum(common.values())
        if same == 0:
            continue
        precision, recall = same / len(p_tokens), same / len(g_tokens)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best


_SPECIAL = {"yes", "no", "noanswer"}


def entity_recall(scored_entities: Sequence[str], gold_entities: Sequence[str], k: int) -> float:
    """Share of gold entities among the top ``k`` scored entities (``ValueError`` without gold)."""
    gold = set(gold_entities)
    if not gold:
        raise ValueError("entity recall needs at least one gold entity")
    return len(gold & set(scored_entities[:k])) / len(gold)


def step_recall(
    question: str, gold_steps: Sequence[dict[str, str]], trace_texts: Sequence[str]
) -> float | None:
    """Share of a question's gold *intermediate* answers (every decomposition step's answer but
    the last, e.g. MuSiQue's ``question_decomposition``) that appear, normalized, in the planner's
    trace (``trace_texts``: its step queries and step answers; a later step rewritten with an
    earlier answer counts). Answers the question itself already names, and empty ones, are not
    intermediate findings and are left out; ``None`` when none is left to find."""
    asked = normalize_answer(question)
    golds = [normalize_answer(s.get("answer", "")) for s in list(gold_steps)[:-1]]
    golds = [g for g in golds if g and g not in asked]
    if not golds:
        return None
    trace = [normalize_answer(t) for t in trace_texts]
    return sum(any(g in t for t in trace) for g in golds) / len(golds)
