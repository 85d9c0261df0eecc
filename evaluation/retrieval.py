"""``hoprag eval retrieval``: document recall of a retriever on an index's processed questions."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from evaluation.metrics import recall_at_k
from hoprag.kg.index import KGIndex
from hoprag.retrieval.base import RetrievalQuery, Retriever


def evaluate_retrieval(
    index: KGIndex,
    retriever: Retriever,
    split: str = "test",
    ks: Sequence[int] = (2, 5),
    batch_size: int = 64,
    group_by: str | None = None,
) -> dict[str, Any]:
    """Mean recall@k over the split's questions that have gold documents in the index.

    ``group_by`` names a question metadata field kept from the benchmark (e.g. ``domain``, ``type``,
    ``hops`` of the synthetic generator); the result then also has per-value figures in ``groups``.
    """
    table = index.questions
    if table is None:
        raise ValueError(f"{index.path} has no processed questions; index a corpus with train.json/test.json")
    rows = [r for r in table.to_pylist() if r["split"] == split]
    if not rows:
        splits = sorted(set(table.column("split").to_pylist()))
        raise ValueError(f"{index.path} has no {split!r} questions (splits: {', '.join(splits) or 'none'})")
    scored = [r for r in rows if r["supporting_docs"]]
    per_question: list[dict[int, float]] = []
    fallbacks = 0
    for start in range(0, len(scored), batch_size):
        chunk = scored[start : start + batch_size]
        queries = [RetrievalQuery(r["question"], tuple(r["question_entities"])) for r in chunk]
        for row, result in zip(chunk, retriever.retrieve(queries, max(ks)), strict=True):
            titles = [d.title for d in result.documents]
            fallbacks += bool(result.notes)
            per_question.append({k: recall_at_k(titles, row["supporting_docs"], k) for k in ks})
    out: dict[str, Any] = _means(per_question, ks)
    out.update(
        {
            "n": len(scored),
            "skipped_no_gold": len(rows) - len(scored),
            "split": split,
            "retriever": retriever.name,
            "fallbacks": fallbacks,
        }
    )
    if group_by:
        groups: dict[str, list[dict[int, float]]] = {}
        for row, recalls in zip(scored, per_question, strict=True):
            value = json.loads(row.get("metadata") or "{}").get(group_by)
            groups.setdefault(str(value), []).append(recalls)
        out["groups"] = {value: {**_means(rs, ks), "n": len(rs)} for value, rs in sorted(groups.items())}
    return out


def _means(per_question: list[dict[int, float]], ks: Sequence[int]) -> dict[str, float]:
    n = len(per_question)
    return {f"recall@{k}": round(sum(r[k] for r in per_question) / n, 4) if n else 0.0 for k in ks}
