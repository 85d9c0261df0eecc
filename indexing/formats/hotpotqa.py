"""HotpotQA and 2WikiMultihopQA items: one shape, 2Wiki adds ``evidences``.

``context`` is ``[[title, [sentence, ...]], ...]`` (the question's own paragraphs: gold and
distractors); ``supporting_facts`` is ``[[title, sentence_id], ...]``. In HippoRAG 2's release the
items have no ``context``: their paragraphs are in the corpus file, found by title.

An item is validated whole before any of its paragraphs is pooled: a malformed context entry, or a
supporting title that is in neither the item's context nor the corpus, leaves the item out (neither
its paragraphs nor its question are read), reported where it is.
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
    paragraph_text,
)


def _context(context: Any) -> dict[str, str] | str:
    """Title -> paragraph text of an item's own paragraphs (the first of a repeated title), or why
    the context is malformed."""
    if not isinstance(context, list):
        return "not a list of [title, sentences]"
    paragraphs: dict[str, str] = {}
    for position, entry in enumerate(context):
        if (
            not isinstance(entry, list | tuple)
            or len(entry) != 2
            or not isinstance(entry[0], str)
            or not isinstance(entry[1], list)
        ):
            return f"entry {position} is not [title, [sentences]]"
        paragraphs.setdefault(entry[0], paragraph_text(entry[1]))
    return paragraphs


def _evidences(item: dict[str, Any]) -> list[list[str]]:
    rows = item.get("evidences")
    if not isinstance(rows, list):
        return []
    return [[str(part) for part in row] for row in rows if isinstance(row, list | tuple) and len(row) == 3]


def read_hotpot_item(
    item: Any, where: Where, pool: ParagraphPool, report: ReadReport
) -> PendingQuestion | None:
    """One HotpotQA / 2Wiki item, validated: a function that pools its paragraphs and returns the
    question (GFM-RAG question fields plus ``candidate_documents`` and, for 2Wiki, ``evidences``);
    ``None`` (reported) when the item is malformed or its gold paragraphs are missing."""
    question = item_question(item, where, report)
    if question is None:
        return None
    qid = item_id(item)
    own: dict[str, str] | None = None
    if item.get("context") is not None:
        context = _context(item["context"])
        if isinstance(context, str):
            report.problem(where, "context", context, item_id=qid)
            return None
        own = context
    facts = item.get("supporting_facts")
    if not isinstance(facts, list):
        report.problem(where, "supporting_facts", "missing or not a list", item_id=qid)
        return None
    titles = list(
        dict.fromkeys(f[0] for f in facts if isinstance(f, list | tuple) and f and isinstance(f[0], str))
    )
    if not titles:
        report.problem(where, "supporting_facts", "names no paragraph title", item_id=qid)
        return None
    for title in titles:
        if (title not in own) if own is not None else not pool.keys_titled(title):
            place = "the item's context" if own is not None else "the corpus"
            report.problem(where, "supporting_facts", f"title {title!r} is not in {place}", item_id=qid)
            return None

    def finish(pool: ParagraphPool) -> dict[str, Any]:
        keys = {title: pool.add(title, text) for title, text in own.items()} if own is not None else None
        supporting = (
            [keys[t] for t in titles]
            if keys is not None
            else [k for t in titles for k in pool.keys_titled(t)]
        )
        metadata = {k: item[k] for k in ("type", "level") if isinstance(item.get(k), str)}
        metadata["hops"] = len(supporting)
        out: dict[str, Any] = {
            "id": qid or f"item-{where.index}",
            "question": question,
            "answer": str(item.get("answer", "")),
            "answer_aliases": [],
            "supporting_facts": supporting,
            "metadata": metadata,
        }
        if keys is not None:
            out["candidate_documents"] = list(keys.values())
        evidences = _evidences(item)
        if evidences:
            out["evidences"] = evidences
        return out

    return finish
