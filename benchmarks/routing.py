"""``hoprag bench routing``: fit the routed retriever's one threshold and measure it, per dataset.

For each index (``--index``, repeatable: the real samples' indexes, a synthetic one), each split
(train, test), every question is linked and retrieved exactly as ``hoprag eval retrieval`` does
(:func:`evaluation.retrieval.evaluate_retrieval`), with dense, the packaged GLM and PPR each ranking
``depth`` documents; their rankings are kept, and every routing threshold is replayed on them
(:func:`hoprag.retrieval.routing.route`): ``min_agreement`` 0 (always fused) to
``agreement_depth + 1`` (never fused: dense). The threshold is fitted on the **train** portions
pooled (best mean recall@5 over those questions, ties by recall@2, then the lower threshold) and
then read on each test portion beside dense, with 95% bootstrap intervals and the paired
difference. An index passed with ``--held-out`` is only measured, never fitted on.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.harness import publish
from hoprag.retrieval.base import RetrievalQuery, RetrievalResult, Retriever
from hoprag.retrieval.routing import DEFAULT_AGREEMENT_DEPTH, RoutedRetriever, route

SPLITS = ("train", "test")


class _Recorder(RoutedRetriever):
    """The routed retriever's own rankings, kept per question text; dense's answered, so that every
    threshold can be replayed on them afterwards."""

    def __init__(self, dense: Retriever, graph: Sequence[Retriever], depth: int) -> None:
        super().__init__(dense, graph, depth=depth)
        self.kept: dict[str, tuple[RetrievalResult, list[RetrievalResult]]] = {}

    def retrieve(self, queries: Sequence[RetrievalQuery], k: int) -> list[RetrievalResult]:
        ranked = self.rankings(queries, k)
        self.kept.update((q.question, r) for q, r in zip(queries, ranked, strict=True))
        return [dense for dense, _ in ranked]


def record(index_dir: Path, split: str, depth: int) -> list[dict[str, Any]]:
    """Each scored question of ``split``: its gold titles and the parts' rankings."""
    from evaluation.questions import select_questions
    from evaluation.retrieval import evaluate_retrieval
    from hoprag.glm.artifact import PACKAGED_GLM_NAME
    from hoprag.kg.index import KGIndex
    from hoprag.linking.linker import normalize_question
    from hoprag.retrieval.loading import index_embedder, load_retriever

    index = KGIndex(index_dir)
    embedder = index_embedder(index)
    parts = [load_retriever(spec, index, embedder) for spec in ("dense", PACKAGED_GLM_NAME, "ppr")]
    recorder = _Recorder(parts[0], parts[1:], depth)
    evaluate_retrieval(index, recorder, split=split, embedder=embedder)
    rows, _ = select_questions(index, split)
    kept = [(r, recorder.kept.get(normalize_question(r["question"]))) for r in rows if r["supporting_docs"]]
    return [{"gold": list(r["supporting_docs"]), "kept": k} for r, k in kept if k is not None]


def recalls(
    questions: list[dict[str, Any]], min_agreement: int | None, agreement_depth: int
) -> dict[int, list[float]]:
    """Per-question recall@2 and @5 of the routed ranking (``None``: dense's)."""
    from hoprag.retrieval.metrics import recall_at_k

    out: dict[int, list[float]] = {2: [], 5: []}
    for q in questions:
        dense, graph = q["kept"]
        result = dense if min_agreement is None else route(dense, graph, 5, min_agreement, agreement_depth)
        titles = [d.title for d in result.documents]
        for k in out:
            out[k].append(recall_at_k(titles, q["gold"], k))
    return out


def fit(train: list[dict[str, Any]], agreement_depth: int) -> tuple[int, dict[int, tuple[float, float]]]:
    """The threshold with the best pooled train recall@5 (then @2, then the lowest), and every
    threshold's pooled train (recall@2, recall@5)."""
    import numpy as np

    scores = {}
    for t in range(agreement_depth + 2):
        r = recalls(train, t, agreement_depth)
        scores[t] = (float(np.mean(r[2])), float(np.mean(r[5])))
    best = max(scores, key=lambda t: (scores[t][1], scores[t][0], -t))
    return best, scores


def run_routing_benchmark(args: argparse.Namespace) -> int:
    from evaluation.stats import bootstrap_ci, paired_bootstrap

    recorded: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for index_dir in [*args.index, *args.held_out]:
        splits = SPLITS if index_dir in args.index else ("test",)
        recorded[str(index_dir)] = {s: record(index_dir, s, args.depth) for s in splits}
        print(
            f"[bench routing] {index_dir}: "
            + ", ".join(f"{s} {len(v)}" for s, v in recorded[str(index_dir)].items())
        )
    train = [q for ix in args.index for q in recorded[str(ix)]["train"]]
    best, fitted = fit(train, args.agreement_depth)
    rows = []
    for name, by_split in recorded.items():
        for split, questions in by_split.items():
            dense = recalls(questions, None, args.agreement_depth)
            routed = recalls(questions, best, args.agreement_depth)
            fused = recalls(questions, 0, args.agreement_depth)
            row: dict[str, Any] = {"index": name, "split": split, "questions": len(questions)}
            for label, r in (("dense", dense), ("routed", routed), ("always_fused", fused)):
                for k in (2, 5):
                    mean, low, high = bootstrap_ci(r[k])
                    row[f"{label}_recall@{k}"] = [round(mean, 3), round(low, 3), round(high, 3)]
            for k in (2, 5):
                d = paired_bootstrap(routed[k], dense[k])
                row[f"routed_minus_dense@{k}"] = [
                    round(d["diff"], 3),
                    round(d["low"], 3),
                    round(d["high"], 3),
                ]
            rows.append(row)
    publish(
        "routing",
        {
            "min_agreement": best,
            "agreement_depth": args.agreement_depth,
            "train_pooled": {str(t): [round(a, 3), round(b, 3)] for t, (a, b) in fitted.items()},
            "train_questions": len(train),
            "rows": rows,
        },
        args,
        _table,
    )
    return 0


def _table(report: dict[str, Any]) -> Iterable[str]:
    yield (
        f"fitted on {report['train_questions']} pooled train questions: min_agreement {report['min_agreement']} "
        f"of top {report['agreement_depth']} (train recall@2/@5 by threshold: {report['train_pooled']})"
    )
    yield "index | split | n | dense R@2 / R@5 | routed R@2 / R@5 | always fused R@2 / R@5 | routed - dense @2 / @5"
    for r in report["rows"]:
        yield (
            f"{r['index']} | {r['split']} | {r['questions']} | {r['dense_recall@2'][0]:.3f} / {r['dense_recall@5'][0]:.3f}"
            f" | {r['routed_recall@2'][0]:.3f} / {r['routed_recall@5'][0]:.3f}"
            f" | {r['always_fused_recall@2'][0]:.3f} / {r['always_fused_recall@5'][0]:.3f}"
            f" | {r['routed_minus_dense@2']} / {r['routed_minus_dense@5']}"
        )


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--index", type=Path, action="append", default=[], help="an index to fit on and measure (repeatable)"
    )
    p.add_argument(
        "--held-out",
        type=Path,
        action="append",
        default=[],
        help="an index only measured (test split), never fitted on",
    )
    p.add_argument(
        "--agreement-depth", type=int, default=DEFAULT_AGREEMENT_DEPTH, help="top documents compared"
    )
    p.add_argument("--depth", type=int, default=20, help="documents each retriever ranks (the fusion depth)")
    p.add_argument("--json", action="store_true", help="one line of JSON")
    p.add_argument("--workdir", type=Path, default=None, help="also write WORKDIR/routing-bench.json")
