"""``hoprag eval retrieval``: document recall of one retriever on an index's questions, in process.

A shortcut into the evaluation machinery, not a second implementation: the questions come from
:func:`evaluation.questions.select_questions` and every question is linked, retrieved and scored
by :class:`evaluation.worker.EvalWorker` over the ``retrieve``-mode system of
:mod:`hoprag.qa.builder`, exactly as a retrieval system in ``hoprag eval run`` and as the QA
endpoint's ``retrieve`` mode.
(``hoprag eval retrieval --out DIR`` runs the full ``eval run`` job instead and writes its report.)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Sequence
from typing import Any, Literal

from evaluation.questions import select_questions
from evaluation.results import error_counts
from evaluation.worker import TOP_DOCS, EvalWorker, score_row
from hoprag.embedding import Embedder
from hoprag.kg.index import KGIndex
from hoprag.llm.base import LLM
from hoprag.llm.factory import LazyLLM
from hoprag.qa.builder import assemble_qa_system, index_llm_config, retrieval_components
from hoprag.qa.config import QASettings
from hoprag.retrieval.base import Retriever
from hoprag.retrieval.candidates import candidate_retriever
from hoprag.retrieval.loading import index_embedder

RetrievalSetting = Literal["pooled", "distractor"]


def evaluate_retrieval(
    index: KGIndex,
    retriever: Retriever,
    split: str = "test",
    ks: Sequence[int] = (2, 5),
    batch_size: int = 64,
    group_by: str | None = None,
    embedder: Embedder | None = None,
    llm: LLM | None = None,
    ids: Collection[str] | None = None,
    setting: RetrievalSetting = "pooled",
) -> dict[str, Any]:
    """Mean recall@k over the split's questions that have gold documents in the index (only those
    whose id is in ``ids``, where given: e.g. a training run's validation questions).

    ``setting``: ``pooled`` ranks every document of the index; ``distractor`` ranks only each
    question's own paragraphs, as the published file gave them (:mod:`hoprag.retrieval.candidates`).

    Each question is linked at query time as the QA endpoint links it (``llm``: the LLM for NER,
    by default the one the index was built with, loaded only for a question without stored links).

    ``group_by`` names a question metadata field kept from the benchmark (e.g. ``domain``, ``type``,
    ``hops`` of the synthetic generator); the result then also has per-value figures in ``groups``.
    Questions whose retrieval failed are counted in ``errors`` (by kind in ``error_kinds``) and left
    out of the means; when every question fails, the first error is raised.
    """
    rows, report = select_questions(index, split)
    if ids is not None:
        rows = [r for r in rows if r["id"] in ids]
    scored = [r for r in rows if r["supporting_docs"]]
    if setting == "distractor":
        retriever = candidate_retriever(retriever, scored, index.document_titles)
    settings = QASettings(llm=index_llm_config(index))
    qa = assemble_qa_system(
        retrieval_components(
            index, retriever, embedder or index_embedder(index), llm or LazyLLM(settings.llm)
        ),
        settings,
        "retrieve",
    )
    worker = EvalWorker.for_qa_system(qa, settings, list(ks), analysis=False)
    records: list[dict[str, Any]] = []
    for start in range(0, len(scored), batch_size):
        records.extend(worker.evaluate(scored[start : start + batch_size]))
    summary = _summarize(rows, scored, records, report.duplicate_ids, ks, split, retriever.name, group_by)
    summary["setting"] = setting
    return summary


def evaluate_endpoint(
    index: KGIndex,
    ask: Callable[[str, int], dict[str, Any]],
    split: str = "test",
    ks: Sequence[int] = (2, 5),
    group_by: str | None = None,
) -> dict[str, Any]:
    """:func:`evaluate_retrieval` of a served QA app: each question goes to ``ask(question, top_k)``
    (``POST /v1/qa`` in ``retrieve`` mode with its trace) and is scored from the documents and seeds
    the response carries, with the same questions, cut-offs and summary as the in-process form."""
    rows, report = select_questions(index, split)
    scored = [r for r in rows if r["supporting_docs"]]
    records: list[dict[str, Any]] = []
    for row in scored:
        record: dict[str, Any] = {"id": row["id"], "error": None}
        try:
            body = ask(row["question"], TOP_DOCS)
            titles = [d["title"] for d in body["documents"]]
            steps = (body.get("trace") or {}).get("steps") or [{}]
            seeds = steps[0].get("seed_sources") or {}
            record.update(
                documents=titles,
                question_entities=list(seeds),
                link_sources=list(seeds.values()),
                notes=[n for s in steps for c in s.get("clues", []) for n in c.get("notes", [])],
                metrics=score_row(row, titles, [], None, list(ks)),
            )
        except Exception as exc:
            record.update(error=f"{type(exc).__name__}: {exc}"[:500], metrics={})
        records.append(record)
    return _summarize(rows, scored, records, report.duplicate_ids, ks, split, "endpoint", group_by)


def _summarize(
    rows: list[dict[str, Any]],
    scored: list[dict[str, Any]],
    records: list[dict[str, Any]],
    duplicate_ids: list[str],
    ks: Sequence[int],
    split: str,
    retriever: str,
    group_by: str | None,
) -> dict[str, Any]:
    ok = [(row, rec) for row, rec in zip(scored, records, strict=True) if not rec["error"]]
    failed = [rec["error"] for rec in records if rec["error"]]
    if failed and not ok:
        raise ValueError(f"every question failed ({len(failed)}); the first: {failed[0]}")
    out: dict[str, Any] = _means([rec["metrics"] for _, rec in ok], ks)
    out.update(
        {
            "n": len(ok),
            "skipped_no_gold": len(rows) - len(scored),
            "duplicate_ids": len(duplicate_ids),
            "errors": len(failed),
            "error_kinds": error_counts(records),
            "split": split,
            "retriever": retriever,
            "fallbacks": sum(bool(rec.get("notes")) for _, rec in ok),
            "seeds_by_linker": dict(
                sorted(Counter(s for _, rec in ok for s in rec.get("link_sources") or []).items())
            ),
        }
    )
    out["per_question"] = [  # what both forms observe (the endpoint returns no entity scores)
        {
            **{k: rec.get(k) for k in ("id", "documents", "question_entities", "link_sources", "error")},
            "recall": {m: v for m, v in rec["metrics"].items() if m.startswith("recall@")},
        }
        for rec in records
    ]
    if group_by:
        groups: dict[str, list[dict[str, float]]] = {}
        for row, rec in ok:
            groups.setdefault(str(row["meta"].get(group_by)), []).append(rec["metrics"])
        out["groups"] = {value: {**_means(ms, ks), "n": len(ms)} for value, ms in sorted(groups.items())}
    return out


def _means(per_question: list[dict[str, float]], ks: Sequence[int]) -> dict[str, float]:
    n = len(per_question)
    return {
        f"recall@{k}": round(sum(m[f"recall@{k}"] for m in per_question) / n, 4) if n else 0.0 for k in ks
    }
