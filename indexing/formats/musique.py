"""MuSiQue items (answerable and full JSONL).

``paragraphs`` is ``[{idx, title, paragraph_text, is_supporting}]`` (20 per question; titles repeat
across different paragraphs, kept apart by :class:`~indexing.formats.model.ParagraphPool`),
``question_decomposition`` ``[{id, question, answer, paragraph_support_idx}]`` (sub-questions name
earlier answers as ``#1``, ``#2``). An unanswerable item (``answerable: false``, the full variant)
is kept for QA with no gold documents, so recall leaves it out, and counted.
"""

from __future__ import annotations

from typing import Any

from indexing.formats.model import ParagraphPool, ReadReport, item_question


def _paragraphs(
    item: dict[str, Any], index: int, pool: ParagraphPool, report: ReadReport
) -> dict[int, tuple[str, bool]]:
    """``idx`` -> (document key, is_supporting) of the item's paragraphs, pooled now."""
    rows = item.get("paragraphs")
    if not isinstance(rows, list):
        report.problem(index, "paragraphs", "missing or not a list", skipped=False)
        return {}
    out: dict[int, tuple[str, bool]] = {}
    for position, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("title"), str):
            report.problem(index, "paragraphs", f"paragraph {position} has no title", skipped=False)
            continue
        text = row.get("paragraph_text")
        if not isinstance(text, str):
            report.problem(index, "paragraphs", f"paragraph {position} has no paragraph_text", skipped=False)
            continue
        idx = row.get("idx", position)
        out[idx if isinstance(idx, int) else position] = (
            pool.add(row["title"], text),
            row.get("is_supporting") is True,
        )
    return out


def _decomposition(item: dict[str, Any], paragraphs: dict[int, tuple[str, bool]]) -> list[dict[str, Any]]:
    steps = item.get("question_decomposition")
    if not isinstance(steps, list):
        return []
    out = []
    for step in steps:
        if not isinstance(step, dict) or not isinstance(step.get("question"), str):
            continue
        support = step.get("paragraph_support_idx")
        out.append(
            {
                "question": step["question"],
                "answer": str(step.get("answer", "")),
                "document": paragraphs[support][0]
                if isinstance(support, int) and support in paragraphs
                else None,
            }
        )
    return out


def read_musique_item(
    item: Any, index: int, pool: ParagraphPool, report: ReadReport
) -> dict[str, Any] | None:
    """One MuSiQue item as a question (GFM-RAG fields plus ``candidate_documents`` and
    ``decomposition``); ``None`` (reported) when it has no question."""
    question = item_question(item, index, report)
    if question is None:
        return None
    paragraphs = _paragraphs(item, index, pool, report)
    answerable = item.get("answerable", True) is not False
    supporting = [key for key, gold in paragraphs.values() if gold] if answerable else []
    if answerable and not supporting:
        report.problem(index, "paragraphs", "no paragraph is_supporting", skipped=False)
    if not answerable:
        report.unanswerable += 1
    qid = str(item.get("id", f"item-{index}"))
    decomposition = _decomposition(item, paragraphs)
    aliases = item.get("answer_aliases")
    return {
        "id": qid,
        "question": question,
        "answer": str(item.get("answer", "")),
        "answer_aliases": [str(a) for a in aliases] if isinstance(aliases, list) else [],
        "supporting_facts": supporting,
        "metadata": {
            "type": qid.split("__", 1)[0] if "__" in qid else "musique",
            "hops": len(decomposition) or len(supporting),
            "answerable": answerable,
            # kept in the index: plan-mode evaluation scores its steps against it (step_recall)
            "decomposition": [{"question": s["question"], "answer": s["answer"]} for s in decomposition],
        },
        "candidate_documents": [key for key, _ in paragraphs.values()],
        "decomposition": decomposition,
    }
