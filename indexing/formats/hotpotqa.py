"""HotpotQA and 2WikiMultihopQA items: one shape, 2Wiki adds ``evidences``.

``context`` is ``[[title, [sentence, ...]], ...]`` (the question's own paragraphs: gold and
distractors); ``supporting_facts`` is ``[[title, sentence_id], ...]``. In HippoRAG 2's release the
items have no ``context``: their paragraphs are in the corpus file, found by title.
"""

from __future__ import annotations

from typing import Any

from indexing.formats.model import ParagraphPool, ReadReport, item_question, paragraph_text


def _context(
    item: dict[str, Any], index: int, pool: ParagraphPool, report: ReadReport
) -> dict[str, str] | None:
    """Title -> document key of the item's own paragraphs (pooled now); ``None`` without a context."""
    context = item.get("context")
    if context is None:
        return None
    if not isinstance(context, list):
        report.problem(index, "context", "not a list of [title, sentences]", skipped=False)
        return {}
    keys: dict[str, str] = {}
    for entry in context:
        if (
            not isinstance(entry, list | tuple)
            or len(entry) != 2
            or not isinstance(entry[0], str)
            or not isinstance(entry[1], list)
        ):
            report.problem(index, "context", "an entry is not [title, [sentences]]", skipped=False)
            continue
        title, sentences = entry
        keys.setdefault(title, pool.add(title, paragraph_text(sentences)))
    return keys


def _supporting(
    item: dict[str, Any], index: int, own: dict[str, str] | None, pool: ParagraphPool, report: ReadReport
) -> list[str]:
    facts = item.get("supporting_facts")
    if not isinstance(facts, list):
        report.problem(index, "supporting_facts", "missing or not a list", skipped=False)
        return []
    titles = [f[0] for f in facts if isinstance(f, list | tuple) and f and isinstance(f[0], str)]
    keys: list[str] = []
    for title in dict.fromkeys(titles):
        found = pool.keys_titled(title) if own is None else [own[title]] if title in own else []
        if not found:
            where = "the item's context" if own is not None else "the corpus"
            report.problem(index, "supporting_facts", f"title {title!r} is not in {where}", skipped=False)
        keys += found
    return keys


def _evidences(item: dict[str, Any]) -> list[list[str]]:
    rows = item.get("evidences")
    if not isinstance(rows, list):
        return []
    return [[str(part) for part in row] for row in rows if isinstance(row, list | tuple) and len(row) == 3]


def read_hotpot_item(item: Any, index: int, pool: ParagraphPool, report: ReadReport) -> dict[str, Any] | None:
    """One HotpotQA / 2Wiki item as a question (GFM-RAG question fields plus ``candidate_documents``
    and, for 2Wiki, ``evidences``); ``None`` (reported) when it has no question."""
    question = item_question(item, index, report)
    if question is None:
        return None
    own = _context(item, index, pool, report)
    supporting = _supporting(item, index, own, pool, report)
    metadata = {k: item[k] for k in ("type", "level") if isinstance(item.get(k), str)}
    metadata["hops"] = len(supporting)
    out: dict[str, Any] = {
        "id": str(item.get("_id", item.get("id", f"item-{index}"))),
        "question": question,
        "answer": str(item.get("answer", "")),
        "answer_aliases": [],
        "supporting_facts": supporting,
        "metadata": metadata,
    }
    if own is not None:
        out["candidate_documents"] = list(own.values())
    evidences = _evidences(item)
    if evidences:
        out["evidences"] = evidences
    return out
