"""``hoprag bench search``: the measurements behind the index's vector and lexical search choices.

1. **ANN libraries** (``--sizes``, default 200k and 1M vectors, 384-d): exact numpy search against
   faiss (HNSW, IVF-Flat), usearch (HNSW) and hnswlib (HNSW) on the same vectors: build seconds,
   file size, memory-mapped open seconds, recall@10 against exact search and single-query
   latency p50/p99 (the serving pattern: one question at a time). Vectors are clustered
   ("MiniLM-like": unit vectors around ``n/50`` random centres, cosine to the centre ~0.7),
   queries are perturbed members, so neighbourhoods exist as they do for real embeddings; pure
   uniform random vectors (``--uniform``) have no neighbourhood structure and are the worst case
   for every graph/cluster index.
2. **BM25** (``--bm25-sizes``, default 10k and 1M synthetic triple texts): hoprag's hand-written
   inverted-index BM25 (:mod:`hoprag.planner.search`) against ``bm25s`` (Lucene variant, same
   ``k1``/``b``): index build seconds, per-query seconds, top-10 overlap and score agreement.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness import publish
from indexing.synthetic_kg import clustered_vectors


def _queries(data: np.ndarray, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed + 1)
    picked = data[rng.choice(len(data), count, replace=False)]
    q = picked + rng.standard_normal(picked.shape).astype(np.float32) * (0.5 / np.sqrt(data.shape[1]))
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


def _latency(
    search: Callable[[np.ndarray], np.ndarray], queries: np.ndarray
) -> tuple[np.ndarray, list[float]]:
    ids, times = [], []
    search(queries[:1])  # warm-up (first page faults of a memory-mapped file)
    for q in queries:
        started = time.perf_counter()
        ids.append(search(q[None, :])[0])
        times.append(time.perf_counter() - started)
    return np.stack(ids), times


def _summary(times: list[float]) -> dict[str, float]:
    ms = np.asarray(times) * 1000
    return {
        "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p99_ms": round(float(np.percentile(ms, 99)), 2),
    }


def _recall(found: np.ndarray, truth: np.ndarray) -> float:
    return float(
        np.mean([len(set(f.tolist()) & set(t.tolist())) / len(t) for f, t in zip(found, truth, strict=True)])
    )


def _candidates(dim: int, n: int) -> dict[str, tuple[Callable[..., Any], Callable[..., Any]]]:
    """name → (build(data, path) -> None, open(path) -> search(queries) -> ids)."""

    def faiss_hnsw(
        m: int, ef_construction: int, ef_search: int
    ) -> tuple[Callable[..., Any], Callable[..., Any]]:
        def build(data: np.ndarray, path: Path) -> None:
            import faiss

            index = faiss.IndexHNSWFlat(dim, m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = ef_construction
            index.add(data)
            faiss.write_index(index, str(path))

        def open_(path: Path) -> Callable[[np.ndarray], np.ndarray]:
            import faiss

            index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY)
            index.hnsw.efSearch = ef_search
            return lambda q: index.search(q, 10)[1]

        return build, open_

    def faiss_ivf(nlist: int, nprobe: int) -> tuple[Callable[..., Any], Callable[..., Any]]:
        def build(data: np.ndarray, path: Path) -> None:
            import faiss

            quantizer = faiss.IndexFlatIP(dim)
            index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
            rng = np.random.default_rng(0)
            index.train(data[rng.choice(len(data), min(len(data), 64 * nlist), replace=False)])
            index.add(data)
            faiss.write_index(index, str(path))

        def open_(path: Path) -> Callable[[np.ndarray], np.ndarray]:
            import faiss

            index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
            index.nprobe = nprobe
            return lambda q: index.search(q, 10)[1]

        return build, open_

    def usearch_hnsw(
        connectivity: int, dtype: str, expansion: int
    ) -> tuple[Callable[..., Any], Callable[..., Any]]:
        def build(data: np.ndarray, path: Path) -> None:
            from usearch.index import Index

            index = Index(ndim=dim, metric="ip", dtype=dtype, connectivity=connectivity)
            index.add(np.arange(len(data), dtype=np.uint64), data)
            index.save(str(path))

        def open_(path: Path) -> Callable[[np.ndarray], np.ndarray]:
            from usearch.index import Index

            index = Index.restore(str(path), view=True)
            assert index is not None
            index.expansion_search = expansion
            return lambda q: np.asarray(index.search(q, 10).keys, dtype=np.int64).reshape(len(q), -1)

        return build, open_

    def hnswlib_hnsw(m: int, ef: int) -> tuple[Callable[..., Any], Callable[..., Any]]:
        def build(data: np.ndarray, path: Path) -> None:
            import hnswlib

            index = hnswlib.Index(space="ip", dim=dim)
            index.init_index(max_elements=len(data), M=m, ef_construction=100)
            index.add_items(data, np.arange(len(data)))
            index.save_index(str(path))

        def open_(path: Path) -> Callable[[np.ndarray], np.ndarray]:
            import hnswlib

            index = hnswlib.Index(space="ip", dim=dim)
            index.load_index(str(path))  # no memory mapping: hnswlib reads the file into RAM
            index.set_ef(ef)
            return lambda q: index.knn_query(q, 10)[0].astype(np.int64)

        return build, open_

    def faiss_ivf_sq8(nlist: int, nprobe: int, rerank: int) -> tuple[Callable[..., Any], Callable[..., Any]]:
        def build(data: np.ndarray, path: Path) -> None:
            import faiss

            quantizer = faiss.IndexFlatIP(dim)
            index = faiss.IndexIVFScalarQuantizer(
                quantizer, dim, nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
            )
            rng = np.random.default_rng(0)
            index.train(data[rng.choice(len(data), min(len(data), 64 * nlist), replace=False)])
            index.add(data)
            faiss.write_index(index, str(path))

        def open_(
            path: Path, vectors: np.ndarray, probes: int = nprobe
        ) -> Callable[[np.ndarray], np.ndarray]:
            import faiss

            index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
            index.nprobe = probes

            def search(q: np.ndarray) -> np.ndarray:
                # candidates from the 8-bit codes, exact scores from the float32 rows
                cand = index.search(q, rerank)[1]
                out = []
                for row, c in zip(q, cand, strict=True):
                    c = c[c >= 0]
                    order = np.argsort(-(np.asarray(vectors[np.sort(c)]) @ row), kind="stable")
                    out.append(np.sort(c)[order[:10]])
                return np.stack(out)

            return search

        return build, open_

    nlist = int(4 * np.sqrt(n))
    return {
        f"faiss IVF{nlist}-SQ8 nprobe16 rerank40": faiss_ivf_sq8(nlist, 16, 40),
        "faiss HNSW32 ef64": faiss_hnsw(32, 80, 64),
        f"faiss IVF{nlist} nprobe16": faiss_ivf(nlist, 16),
        "usearch HNSW16 f32 ef64": usearch_hnsw(16, "f32", 64),
        "usearch HNSW16 i8 ef64": usearch_hnsw(16, "i8", 64),
        "hnswlib HNSW16 ef64": hnswlib_hnsw(16, 64),
    }


def measure_ann(
    n: int, dim: int, queries: int, uniform: bool, only: list[str] | None, nprobes: list[int]
) -> list[dict[str, Any]]:
    """One row per method (exact first) at ``n`` vectors."""
    import psutil

    data = clustered_vectors(n, dim, seed=0, uniform=uniform)
    q = _queries(data, queries, seed=0)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        npy = Path(tmp) / "vectors.npy"
        np.save(npy, data)
        from hoprag.vectorsearch import ExactSearch

        vectors = np.load(npy, mmap_mode="r")
        exact = ExactSearch(vectors)
        truth, times = _latency(lambda x: exact.search(x, 10)[0], q)
        rows.append(
            {
                "n": n,
                "method": "exact (numpy, mmap)",
                "build_s": 0.0,
                "file_mb": round(npy.stat().st_size / 2**20),
                "open_s": 0.0,
                "recall@10": 1.0,
                **_summary(times),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
        for name, (build, open_) in _candidates(dim, n).items():
            if only and not any(o in name for o in only):
                continue
            path = Path(tmp) / "ann.index"
            started = time.perf_counter()
            build(data, path)
            build_s = time.perf_counter() - started
            for probes in nprobes if "rerank" in name else [0]:
                rss0 = psutil.Process().memory_info().rss
                started = time.perf_counter()
                search = open_(path, vectors, probes) if probes else open_(path)
                open_s = time.perf_counter() - started
                found, times = _latency(search, q)
                label = name.replace("nprobe16", f"nprobe{probes}") if probes else name
                rows.append(
                    {
                        "n": n,
                        "method": label,
                        "build_s": round(build_s, 1),
                        "file_mb": round(path.stat().st_size / 2**20),
                        "open_s": round(open_s, 3),
                        "rss_after_queries_mb": round((psutil.Process().memory_info().rss - rss0) / 2**20),
                        "recall@10": round(_recall(found, truth), 3),
                        **_summary(times),
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
                del search
            path.unlink()
    return rows


def _triple_texts(n: int, seed: int) -> list[str]:
    """Synthetic triple texts like ``hoprag bench index``'s graph (entities ~ n/5, 64 relations)."""
    rng = random.Random(seed)
    words = ["Halleck", "Quifen", "Carrow", "Ulmar", "river", "city", "film", "band", "Serrano", "Okafor"]
    n_entities = max(10, n // 5)
    entities = [f"Entity{i} {rng.choice(words)} {rng.choice(words)}" for i in range(n_entities)]
    relations = [f"relation {rng.choice(words).lower()} {i}" for i in range(64)]
    return [
        f"{entities[rng.randrange(n_entities)]} {relations[rng.randrange(64)]} {entities[rng.randrange(n_entities)]}"
        for _ in range(n)
    ]


def measure_bm25(n: int, queries: int) -> dict[str, Any]:
    """hoprag's BM25 vs bm25s (Lucene, same k1/b) on ``n`` synthetic triple texts."""
    import bm25s

    from hoprag.planner.search import BM25, tokenize

    texts = _triple_texts(n, seed=0)
    rng = random.Random(1)
    qs = [" ".join(rng.sample(tokenize(texts[rng.randrange(n)]), 3)) for _ in range(queries)]
    started = time.perf_counter()
    ours = BM25(texts)
    ours_build = time.perf_counter() - started
    started = time.perf_counter()
    theirs = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    theirs.index([tokenize(t) for t in texts], show_progress=False)
    theirs_build = time.perf_counter() - started
    ours_t, theirs_t, overlap, max_diff = [], [], [], 0.0
    for query in qs:
        started = time.perf_counter()
        a = ours.scores(query)
        ours_t.append(time.perf_counter() - started)
        started = time.perf_counter()
        b = theirs.get_scores(tokenize(query))
        theirs_t.append(time.perf_counter() - started)
        top_a = set(np.argsort(-a, kind="stable")[:10].tolist())
        top_b = set(np.argsort(-b, kind="stable")[:10].tolist())
        overlap.append(len(top_a & top_b) / 10)
        max_diff = max(max_diff, float(np.max(np.abs(a - b))))
    return {
        "texts": n,
        "ours_build_s": round(ours_build, 2),
        "bm25s_build_s": round(theirs_build, 2),
        "ours_query": _summary(ours_t),
        "bm25s_query": _summary(theirs_t),
        "top10_overlap": round(float(np.mean(overlap)), 3),
        "max_abs_score_diff": round(max_diff, 5),
    }


def run_search_benchmark(args: argparse.Namespace) -> int:
    """Entry point of ``hoprag bench search``."""
    result: dict[str, Any] = {"dim": args.dim, "ann": [], "bm25": []}
    for n in args.sizes:
        result["ann"] += measure_ann(n, args.dim, args.queries, args.uniform, args.methods, args.nprobe)
    for n in args.bm25_sizes:
        result["bm25"].append(measure_bm25(n, args.queries))
        print(json.dumps(result["bm25"][-1]), flush=True)
    result["uniform"] = args.uniform
    publish("search", result, args, table=_table)
    return 0


def _table(report: dict[str, Any]) -> Iterator[str]:
    """The human-readable lines of ``hoprag bench search``'s report."""
    yield f"{report['dim']}-d, {'uniform' if report['uniform'] else 'clustered'} vectors"
    yield (
        f"{'n':>8}  {'method':<28} {'build s':>8} {'file MB':>8} {'open s':>7} {'recall@10':>9} {'p50 ms':>7} {'p99 ms':>7}"
    )
    for r in report["ann"]:
        yield (
            f"{r['n']:>8}  {r['method']:<28} {r['build_s']:>8} {r['file_mb']:>8} {r['open_s']:>7} "
            f"{r['recall@10']:>9} {r['p50_ms']:>7} {r['p99_ms']:>7}"
        )
    for r in report["bm25"]:
        yield (
            f"BM25 {r['texts']} texts: build ours {r['ours_build_s']} s / bm25s {r['bm25s_build_s']} s; query p50 "
            f"ours {r['ours_query']['p50_ms']} ms / bm25s {r['bm25s_query']['p50_ms']} ms; top-10 overlap "
            f"{r['top10_overlap']}, max |score diff| {r['max_abs_score_diff']}"
        )


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sizes", type=int, nargs="*", default=[200_000, 1_000_000], help="vector counts")
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--queries", type=int, default=200, help="queries per measurement")
    p.add_argument("--uniform", action="store_true", help="uniform random unit vectors (worst case)")
    p.add_argument("--methods", nargs="*", default=None, help="only methods whose name contains one of these")
    p.add_argument(
        "--nprobe",
        type=int,
        nargs="*",
        default=[16],
        help="IVF lists probed by the rescored IVF-SQ8 (a sweep)",
    )
    p.add_argument("--bm25-sizes", type=int, nargs="*", default=[10_000, 1_000_000], help="triple texts")
    p.add_argument("--workdir", type=Path, default=Path("runs/bench-search"))
    p.add_argument("--json", action="store_true")
