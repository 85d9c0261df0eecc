"""MuSiQue items (answerable and full JSONL).

``paragraphs`` is ``[{idx, title, paragraph_text, is_supporting}]`` (20 per question; titles repeat
across different paragraphs, kept apart by :class:`~indexing.formats.model.ParagraphPool`),
``question_decomposition`` ``[{id, question, answer, paragraph_support_idx}]`` (sub-questions name
earlier answers as ``#1``, ``#2``). An unanswerable item (``answerable: false``, the full variant)
is kept for QA with no gold documents, so recall leaves it out, and counted.
"""

from __future__ import annotations

from typing import Any

from indexing.formats.model import (
    ParagraphPool,
    PendingQuestion,
    ReadReport,
    Where,
    item_id,
    item_question,
)

Paragraph = tuple[str, str, bool]  # title, text, is_supporting


def _paragraphs(rows: Any) -> dict[int, Paragraph] | str:
    """``idx`` -> (title, text, is_supporting) of an item's paragraphs, or why they are malformed."""
    if not isinstance(rows, list):
        return "missing or not a list"
    out: dict[int, Paragraph] = {}
    for position, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("title"), str):
            return f"paragraph {position} has no title"
        text = row.get("paragraph_text")
        if not isinstance(text, str):
            return f"paragraph {position} has no paragraph_text"
        idx = row.get("idx", position)
        out[idx if isinstance(idx, int) else position] = (
            row["title"],
            text,
            row.get("is_supporting") is True,
        )
    return out


def _decomposition(
    item: dict[str, Any], paragraphs: dict[int, Paragraph]
) -> list[tuple[str, str, int | None]]:
    """(sub-question, answer, supporting paragraph idx) of each decomposition step."""
    steps = item.get("question_decomposition")
    if not isinstance(steps, list):
        return []
    out = []
    for step in steps:
        if not isinstance(step, dict) or not isinstance(step.get("question"), str):
            continue
        support = step.get("paragraph_support_idx")
        out.append(
            (
                step["question"],
                str(step.get("answer", "")),
                support if isinstance(support, int) and support in paragraphs else None,
            )
        )
    return out


def read_musique_item(
    item: Any, where: Where, pool: ParagraphPool, report: ReadReport
) -> PendingQuestion | None:
    """One MuSiQue item, validated: a function that pools its paragraphs and returns the question
    (GFM-RAG fields plus ``candidate_documents`` and ``decomposition``); ``None`` (reported) when the
    item is malformed or, answerable, marks no supporting paragraph."""
    question = item_question(item, where, report)
    if question is None:
        return None
    qid = item_id(item)
    paragraphs = _paragraphs(item.get("paragraphs"))
    if isinstance(paragraphs, str):
        report.problem(where, "paragraphs", paragraphs, item_id=qid)
        return None
    answerable = item.get("answerable", True) is not False
    if answerable and not any(gold for _, _, gold in paragraphs.values()):
        report.problem(where, "paragraphs", "no paragraph is_supporting", item_id=qid)
        return None
    steps = _decomposition(item, paragraphs)

    def finish(pool: ParagraphPool) -> dict[str, Any]:
        keys = {idx: pool.add(title, text) for idx, (title, text, _) in paragraphs.items()}
        supporting = [keys[idx] for idx, (_, _, gold) in paragraphs.items() if gold] if answerable else []
        if not answerable:
            report.unanswerable += 1
        question_id = qid or f"item-{where.index}"
        decomposition = [
            {"question": q, "answer": a, "document": keys[idx] if idx is not None else None}
            for q, a, idx in steps
        ]
        aliases = item.get("answer_aliases")
        return {
            "id": question_id,
            "question": question,
            "answer": str(item.get("answer", "")),
            "answer_aliases": [str(a) for a in aliases] if isinstance(aliases, list) else [],
            "supporting_facts": supporting,
            "metadata": {
                "type": question_id.split("__", 1)[0] if "__" in question_id else "musique",
                "hops": len(decomposition) or len(supporting),
                "answerable": answerable,
                # kept in the index: plan-mode evaluation scores its steps against it (step_recall)
                "decomposition": [{"question": s["question"], "answer": s["answer"]} for s in decomposition],
            },
            "candidate_documents": list(keys.values()),
            "decomposition": decomposition,
        }

    return finish
