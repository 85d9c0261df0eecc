"""``hoprag bench serve --kg-triples N [N ...]``: the QA app over synthetic KGs of N triples, before
and after issue 17's vector search, in one run.

For each size a synthetic index (:mod:`indexing.synthetic_kg`: random 384-d vectors, no LLM) is
written twice from the same tables, then served one variant after the other (``batch, 1
replica``, dense retriever, ``retrieve`` mode):

* ``before``: the index layout and search of main before issue 17: no ``triple_embeddings.npy``
  (the QA replica reads the triple vectors from ``$HOPRAG_CACHE_DIR/triple-vectors`` into RAM:
  the bench seeds that cache, so the hours of first-use embedding are not counted), no ANN files,
  exact scans (``vector_search.mode: exact``). The document vectors are in the snapshot in both
  variants: main embedded every document in each Retriever replica at load, which at 100k
  documents takes longer than the benchmark.
* ``after``: triple vectors and faiss ANN indexes in the snapshot, memory-mapped.

Reported per variant: seconds from deploy to ready, each replica's load seconds and peak RSS above
its start-up baseline (``memory()`` of the QA and Retriever deployments), p50/p99 of the load.
As in ``hoprag bench serve``, every question is asked once first (the LLM and link caches answer
the load), so the figures are retrieval plus serving.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness import publish


def _indexes(workdir: Path, triples: int) -> dict[str, Path]:
    """The before/after indexes of ``triples`` triples (written once, reused by later runs)."""
    from hoprag.kg.index import KGIndex
    from hoprag.planner.knowledge import triple_vector_cache_path
    from hoprag.vectorsearch import AnnBuildConfig
    from indexing.synthetic_kg import synthetic_tables, write_synthetic_index

    root = workdir / f"kg-{triples}"
    paths = {"before": root / "before", "after": root / "after"}
    if all((p / "manifest.json").is_file() for p in paths.values()):
        return paths
    shutil.rmtree(root, ignore_errors=True)
    started = time.perf_counter()
    tables = synthetic_tables(triples)
    print(f"[bench serve] {triples} triples: tables in {time.perf_counter() - started:.0f} s", flush=True)
    started = time.perf_counter()
    write_synthetic_index(paths["after"], tables, AnnBuildConfig().ann_min_rows)
    print(f"[bench serve] after index written in {time.perf_counter() - started:.0f} s", flush=True)
    vectors = tables.triple_embeddings
    tables.triple_embeddings = None
    write_synthetic_index(paths["before"], tables, ann_min_rows=None)
    cache = triple_vector_cache_path(KGIndex(paths["before"], verify="none"), "packaged:all-MiniLM-L6-v2")
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.save(cache, np.asarray(vectors, dtype=np.float32))
    return paths


def _memory(deployment: str) -> dict[str, Any]:
    from ray import serve

    handle = serve.get_deployment_handle(deployment, app_name="hoprag")
    return dict(handle.memory.remote().result(timeout_s=60))


def run_scale_benchmark(args: argparse.Namespace) -> int:
    from ray import serve

    from serving.load import closed_loop, load_test_settings, warm_up
    from serving.run import start_app, wait_until_ready

    results = []
    for triples in args.kg_triples:
        paths = _indexes(args.workdir, triples)
        for variant in args.variants.split(","):
            index = paths[variant]
            from hoprag.kg.index import KGIndex

            table = KGIndex(index, verify="none").questions
            assert table is not None
            questions = table.column("question").to_pylist()[: args.questions]
            settings = load_test_settings(
                index, "dense", vector_search={"mode": "exact" if variant == "before" else "auto"}
            )
            print(f"[bench serve] {triples} triples, {variant}: deploying", flush=True)
            started = time.perf_counter()
            base = start_app(settings, port=args.port)
            wait_until_ready(base, progress=False)
            ready_s = time.perf_counter() - started
            warm_up(base, questions, top_k=5, timeout_s=600)
            load = closed_loop(base, questions, args.concurrency, args.seconds, top_k=5)
            row = {
                "triples": triples,
                "variant": variant,
                "ready_s": round(ready_s, 1),
                "qa": _memory("QA"),
                "retriever": _memory("Retriever"),
                **load,
            }
            results.append(row)
            print(f"  {json.dumps(row)}", flush=True)
            serve.delete("hoprag")
    serve.shutdown()
    report = {
        "concurrency": args.concurrency,
        "seconds": args.seconds,
        "results": results,
    }
    publish("serve-scale", report, args, table=_table)
    return 0


def _table(report: dict[str, Any]) -> Iterator[str]:
    """The human-readable lines of ``hoprag bench serve --kg-triples``'s report."""
    yield f"dense retriever, retrieve mode, {report['concurrency']} clients, {report['seconds']:g} s"
    yield "triples   variant  ready s  QA load s  QA peak MB  Retr. load s  Retr. peak MB  QPS   p50 ms  p99 ms"
    for r in report["results"]:
        yield (
            f"{r['triples']:>8}  {r['variant']:<7} {r['ready_s']:>7} {r['qa']['load_seconds']:>10} "
            f"{r['qa']['peak_above_baseline_mb']:>11} {r['retriever']['load_seconds']:>13} "
            f"{r['retriever']['peak_above_baseline_mb']:>14} {r['qps']:>5} {r['p50_ms']:>8} {r['p99_ms']:>7}"
        )
