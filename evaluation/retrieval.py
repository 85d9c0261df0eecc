"""``hoprag eval retrieval``: document recall of a retriever on an index's processed questions."""

from __future__ import annotations

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
) -> dict[str, Any]:
    """Mean recall@k over the split's questions that have gold documents in the index."""
    table = index.questions
    if table is None:
        raise ValueError(f"{index.path} has no processed questions; index a corpus with train.json/test.json")
    rows = [r for r in table.to_pylist() if r["split"] == split]
    if not rows:
        splits = sorted(set(table.column("split").to_pylist()))
        raise ValueError(f"{index.path} has no {split!r} questions (splits: {', '.join(splits) or 'none'})")
    scored = [r for r in rows if r["supporting_docs"]]
    totals = dict.fromkeys(ks, 0.0)
    fallbacks = 0
    for start in range(0, len(scored), batch_size):
        chunk = scored[start : start + batch_size]
        queries = [RetrievalQuery(r["question"], tuple(r["question_entities"])) for r in chunk]
        for row, result in zip(chunk, retriever.retrieve(queries, max(ks)), strict=True):
            titles = [d.title for d in result.documents]
            fallbacks += bool(result.notes)
            for k in ks:
                totals[k] += recall_at_k(titles, row["supporting_docs"], k)
    n = len(scored)
    out: dict[str, Any] = {f"recall@{k}": round(totals[k] / n, 4) if n else 0.0 for k in ks}
    out.update(
        {
            "n": n,
            "skipped_no_gold": len(rows) - n,
            "split": split,
            "retriever": retriever.name,
            "fallbacks": fallbacks,
        }
    )
    return out
