"""``hoprag bench ppr``: HippoRAG 2's PPR retriever at scale, beside dense retrieval and the GLM.

For each graph — a synthetic KG index of N triples (:mod:`indexing.synthetic_kg`: random 384-d
vectors, no LLM; written once under ``--workdir`` and reused) and any real index given with
``--index`` — and each retriever (``--retrievers``, default ``ppr``, ``dense`` and
``packaged-glm``), a fresh process loads the retriever and answers the index's test questions one
at a time (top 5). Reported per pair: load seconds, latency p50 / p95 per question, the child's
peak RSS (``VmHWM``: its whole footprint: index, vectors, graph, model) and how many questions the
retriever answered with its dense fallback (no seed). The retrievers take turns on the same
questions, so the ratios to dense hold on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.harness import peak_rss_mib, publish

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RETRIEVERS = ("ppr", "dense", "packaged-glm")
_CHILD = "import sys; from benchmarks.ppr import _child; _child(sys.argv[1:])"


def synthetic_index(workdir: Path, triples: int) -> Path:
    """The synthetic index of ``triples`` triples under ``workdir`` (written on first use)."""
    from hoprag.vectorsearch import AnnBuildConfig
    from indexing.synthetic_kg import synthetic_tables, write_synthetic_index

    path = workdir / f"kg-{triples}"
    if not (path / "manifest.json").is_file():
        started = time.perf_counter()
        write_synthetic_index(path, synthetic_tables(triples), AnnBuildConfig().ann_min_rows)
        print(
            f"[bench ppr] {triples:,}-triple index written in {time.perf_counter() - started:.0f} s",
            flush=True,
        )
    return path


def _child(argv: Sequence[str]) -> None:
    """In a fresh process: load ``spec`` over ``index`` and time ``questions`` retrievals."""
    import numpy as np

    from hoprag.kg.index import KGIndex
    from hoprag.retrieval.base import RetrievalQuery
    from hoprag.retrieval.loading import index_embedder, load_retriever

    index_dir, spec, count = argv[0], argv[1], int(argv[2])
    started = time.perf_counter()
    index = KGIndex(index_dir)
    retriever = load_retriever(spec, index, index_embedder(index))
    load_s = time.perf_counter() - started
    rows = [r for r in index.questions.to_pylist() if r["split"] == "test"][:count]  # type: ignore[union-attr]
    queries = [RetrievalQuery(r["question"], tuple(r.get("question_entities") or ())) for r in rows]
    retriever.retrieve(queries[:1], k=5)  # first call: lazy tables, caches
    seconds, fallbacks = [], 0
    for query in queries:
        t0 = time.perf_counter()
        [result] = retriever.retrieve([query], k=5)
        seconds.append(time.perf_counter() - t0)
        fallbacks += any("dense" in note for note in result.notes)
    print(
        json.dumps(
            {
                "load_s": round(load_s, 2),
                "questions": len(seconds),
                "p50_s": round(float(np.percentile(seconds, 50)), 4),
                "p95_s": round(float(np.percentile(seconds, 95)), 4),
                "peak_rss_mib": peak_rss_mib(),
                "dense_fallbacks": fallbacks,
            }
        )
    )


def measure(index: Path, spec: str, questions: int) -> dict[str, Any]:
    """One retriever over one index, in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(index), spec, str(questions)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO_ROOT,
    )
    if done.returncode != 0:
        return {
            "error": done.stderr.strip().splitlines()[-1]
            if done.stderr.strip()
            else f"exit {done.returncode}"
        }
    return json.loads(done.stdout.strip().splitlines()[-1])


def _table(report: dict[str, Any]) -> Iterable[str]:
    for row in report["rows"]:
        if "error" in row:
            yield f"  {row['graph']:<28} {row['retriever']:<14} failed: {row['error']}"
            continue
        yield (
            f"  {row['graph']:<28} {row['retriever']:<14} load {row['load_s']:>7.1f} s  p50 {row['p50_s']:>7.3f} s  "
            f"p95 {row['p95_s']:>7.3f} s  peak RSS {row['peak_rss_mib']:>6,} MiB  ({row['questions']} questions, "
            f"{row['dense_fallbacks']} answered by dense)"
        )


def run_ppr_benchmark(args: argparse.Namespace) -> int:
    """Entry point of ``hoprag bench ppr``."""
    graphs = [(f"synthetic {n:,} triples", synthetic_index(args.workdir, n)) for n in args.kg_triples]
    graphs += [(str(path), path) for path in args.index]
    rows = []
    for label, path in graphs:
        for spec in args.retrievers:
            rows.append({"graph": label, "retriever": spec, **measure(path, spec, args.questions)})
            print(next(iter(_table({"rows": rows[-1:]}))), flush=True)
    publish("ppr", {"rows": rows, "questions": args.questions}, args, _table)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--kg-triples", type=int, nargs="*", default=[1_000_000], help="synthetic graph sizes (0 or more)"
    )
    p.add_argument("--index", type=Path, action="append", default=[], help="a real index too (repeatable)")
    p.add_argument("--retrievers", nargs="+", default=list(DEFAULT_RETRIEVERS), help="specs, in turn")
    p.add_argument("--questions", type=int, default=40, help="test questions timed per pair")
    p.add_argument("--json", action="store_true", help="one line of JSON")
    p.add_argument("--workdir", type=Path, default=Path("runs/bench-ppr"))
