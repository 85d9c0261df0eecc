"""``hoprag bench eval``: retrieval-evaluation throughput, Ray Data actor pool vs one process, same run.

Both score the same questions with the same system (a GLM retriever by default); the single
process loads the system once and loops; the actor pool is the real ``hoprag eval run`` path
(Ray Data ``map_batches`` over N actors, results appended as they finish). Wall time includes
loading the system (once per actor for the pool).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.harness import publish


def run_eval_benchmark(args: argparse.Namespace) -> int:
    from evaluation.config import BenchmarkSpec, EvalConfig, SystemSpec
    from evaluation.questions import load_questions
    from evaluation.runner import evaluate_pair
    from evaluation.worker import EvalWorker
    from hoprag.ray_runtime import init_ray

    bench = BenchmarkSpec(name="bench", index=args.index, limit=args.questions)
    rows, _ = load_questions(bench)
    system = SystemSpec(name="system", kind="retrieval", retriever=args.retriever)
    out = Path(tempfile.mkdtemp(prefix="hoprag-bench-eval-"))
    try:
        t0 = time.perf_counter()
        worker = EvalWorker(str(args.index), system.model_dump(mode="json"), {}, [1, 2, 5, 10])
        loaded = time.perf_counter() - t0
        for start in range(0, len(rows), 8):
            worker({"row": [json.dumps(r, default=str) for r in rows[start : start + 8]]})
        single = time.perf_counter() - t0
        init_ray()
        results = {
            "single process": {"questions": len(rows), "wall_s": round(single, 2), "load_s": round(loaded, 2)}
        }
        for actors in args.actors:
            config = EvalConfig(
                benchmarks=[bench],
                systems=[system],
                out=out / f"pool{actors}",
                retrieval_actors=actors,
                batch_size=8,
                cpus_per_actor=args.cpus_per_actor,
            )
            t1 = time.perf_counter()
            counts = evaluate_pair(config, bench, system, rows)
            results[f"actor pool ({actors})"] = {
                "questions": counts["computed"],
                "wall_s": round(time.perf_counter() - t1, 2),
            }
        for r in results.values():
            r["questions_per_s"] = round(r["questions"] / r["wall_s"], 2)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    report = {
        "index": str(args.index),
        "retriever": args.retriever,
        "questions": len(rows),
        "results": results,
    }
    publish("eval", report, args, table=_table)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--index", type=Path, default=Path("runs/synth-ref-index"))
    p.add_argument("--retriever", default="runs/synth-ref-glm-8ep", help="retriever directory or 'dense'")
    p.add_argument("--questions", type=int, default=120)
    p.add_argument("--actors", type=int, nargs="+", default=[2], help="actor pool sizes to measure")
    p.add_argument("--cpus-per-actor", type=float, default=1.0)
    p.add_argument("--json", action="store_true")


def _table(report: dict[str, Any]) -> Iterator[str]:
    """The human-readable lines of ``hoprag bench eval``'s report."""
    yield (f"{report['questions']} questions; retriever {report['retriever']}")
    for name, r in report["results"].items():
        yield (f"  {name:<18} {r['questions_per_s']:>7} questions/s  ({r['wall_s']} s wall)")
