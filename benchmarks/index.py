"""``hoprag bench index``: indexing throughput and costs, each next to a baseline from the same run.

1. LLM extraction docs/min: the Ray Data pipeline (actor pool, batched generation) against a plain
   sequential loop (one document at a time) over the same backend and the same documents. The
   pipeline's time includes Ray start-up, actor start-up and model load; the loop's time excludes
   its model load, so the comparison favours the baseline.
2. Peak memory (RSS of this process and all its descendants, i.e. Ray workers) and index size per
   1k triples of the index built from (1).
3. Graph build without LLM or embedding model for N synthetic triples: normalization, ids,
   deduplication, provenance, document links and CSR adjacency; plus embedding throughput of the
   configured embedder, from which the embedding time for those entities is extrapolated.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

from benchmarks.harness import publish, time_call


class PeakRSS:
    """Samples the RSS of this process tree in the background; ``peak_mb`` after ``stop()``."""

    def __init__(self, interval_s: float = 0.25) -> None:
        self.interval_s = interval_s
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> float:
        me = psutil.Process()
        total = 0
        for p in [me, *me.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                continue
        return total / 2**20

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, self._sample())
            self._stop.wait(self.interval_s)

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_mb = max(self.peak_mb, self._sample())


def _documents(n: int) -> list[tuple[str, str]]:
    from synthetic import SyntheticConfig, generate

    bench = generate(
        SyntheticConfig(seed=11, num_documents=max(n, 40), num_train_questions=0, num_test_questions=0)
    )
    return list(bench.corpus.items())[:n]


def measure_extraction(args: argparse.Namespace, config: Any) -> dict[str, Any]:
    """Ray Data pipeline vs sequential loop on the same backend and documents."""
    from hoprag.llm.base import TASK_OPENIE
    from hoprag.llm.factory import build_llm, expected_model_id
    from indexing.cache import ExtractionCache
    from indexing.corpus import Document
    from indexing.extract import extract_documents, extraction_key, extraction_model_id
    from indexing.pipeline import build_index, run_extraction

    docs = _documents(args.docs)
    workdir: Path = args.workdir
    shutil.rmtree(workdir, ignore_errors=True)
    index_dir = workdir / "index"
    model_id = extraction_model_id(lambda task: expected_model_id(config.llm, task), config.extraction)
    rows = [
        (TASK_OPENIE, extraction_key(Document(t, x).content_hash, model_id, config.extraction), x)
        for t, x in docs
    ]
    with PeakRSS() as rss:
        started = time.perf_counter()
        records = run_extraction(rows, config, ExtractionCache(index_dir))
        pipeline_s = time.perf_counter() - started
    corpus_file = workdir / "corpus.jsonl"
    corpus_file.write_text("\n".join(json.dumps({"title": t, "text": x}) for t, x in docs))
    from indexing.corpus import read_corpus

    summary = build_index(index_dir, config, corpus=read_corpus(corpus_file))  # all cached: graph only
    snapshot_bytes = sum(p.stat().st_size for p in (index_dir / "snapshots").rglob("*") if p.is_file())

    seq_docs = docs[: args.sequential_docs]
    llm_config = config.llm.model_copy(deep=True)
    if llm_config.backend == "embedded":
        llm_config.embedded.max_batch_size = 1
        llm_config.embedded.num_threads = llm_config.embedded.num_threads or os.cpu_count()
    llm = build_llm(llm_config)
    seq_cfg = config.extraction.model_copy(update={"batch_size": 1})
    started = time.perf_counter()
    for title, text in seq_docs:
        extract_documents(llm, [title], [text], seq_cfg)
    sequential_s = time.perf_counter() - started
    ray_dpm = 60 * len(docs) / pipeline_s
    seq_dpm = 60 * len(seq_docs) / sequential_s
    return {
        "documents": len(docs),
        "pipeline_seconds": round(pipeline_s, 1),
        "pipeline_docs_per_min": round(ray_dpm, 1),
        "sequential_documents": len(seq_docs),
        "sequential_seconds": round(sequential_s, 1),
        "sequential_docs_per_min": round(seq_dpm, 1),
        "speedup": round(ray_dpm / seq_dpm, 2),
        "pipeline_statuses": dict(Counter(r.status for r in records)),
        "peak_rss_mb": round(rss.peak_mb),
        "triples": summary.triples,
        "index_bytes": snapshot_bytes,
        "index_kb_per_1k_triples": round(snapshot_bytes / 1024 / max(1, summary.triples) * 1000, 1),
        "batch_size": config.extraction.batch_size,
        "concurrency": config.extraction.concurrency,
        "llm": model_id,
    }


def graph_bench_entity_name(rng: random.Random, i: int) -> str:
    """Entity ``i`` of the graph-build benchmark. Its own naming (not :mod:`indexing.synthetic_kg`'s):
    the figures in docs/benchmarks.md were measured with these names and this sequence of draws."""
    return f"Entity {i} {rng.choice(['Halleck', 'Quifen', 'Carrow', 'Ulmar'])}"


def measure_graph_build(num_triples: int, config: Any) -> dict[str, Any]:
    """Model-free graph construction for ``num_triples`` synthetic triples (10 per document)."""
    from hoprag.embedding import SentenceTransformerEmbedder
    from hoprag.kg.store import write_snapshot
    from hoprag.kg.tables import Adjacency
    from indexing.graph import build_graph_structure
    from indexing.synthetic_kg import random_document_triples

    doc_triples = random_document_triples(num_triples, random.Random(0), graph_bench_entity_name)
    with PeakRSS() as rss:
        started = time.perf_counter()
        g = build_graph_structure(len(doc_triples), doc_triples, [[] for _ in doc_triples])
        Adjacency.build(len(g.entity_names), g.head, g.tail)
        graph_s = time.perf_counter() - started
    # On-disk size at this scale: the embeddings are written at their real shape (their values do
    # not change the size of .npy files), so the size is exact without hours of embedding.
    tables = _tables_for_size(g, dim=384)
    with tempfile.TemporaryDirectory() as tmp:
        write_snapshot(Path(tmp), tables, {"counts": {}})
        index_bytes = sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file())
    embedder = SentenceTransformerEmbedder(config.embedder)
    sample = g.entity_names[:2000]
    per_s = len(sample) / time_call(lambda: embedder.encode(sample), warmup=1, repeat=1).median
    return {
        "input_triples": num_triples,
        "unique_triples": len(g.head),
        "entities": len(g.entity_names),
        "graph_build_seconds": round(graph_s, 1),
        "graph_peak_rss_mb": round(rss.peak_mb),
        "index_mb": round(index_bytes / 2**20, 1),
        "index_kb_per_1k_triples": round(index_bytes / 1024 / len(g.head) * 1000, 1),
        "embedder_entities_per_second": round(per_s),
        "embedding_seconds_extrapolated": round(len(g.entity_names) / per_s, 1),
    }


def _tables_for_size(g: Any, dim: int) -> Any:
    import numpy as np
    import pyarrow as pa

    from hoprag.kg.tables import Adjacency, KGTables

    n_docs = int(g.doc_entity_doc.max()) + 1 if len(g.doc_entity_doc) else 0
    return KGTables(
        documents=pa.table({"doc_id": pa.array(np.arange(n_docs, dtype=np.int32))}),
        entity_names=g.entity_names,
        entity_surface=g.entity_surface,
        entity_num_docs=g.entity_num_docs,
        relation_names=g.relation_names,
        head=g.head,
        relation=g.relation,
        tail=g.tail,
        kind=np.zeros(len(g.head), np.int8),
        triple_doc_ids=g.triple_doc_ids,
        doc_entity_doc=g.doc_entity_doc,
        doc_entity_entity=g.doc_entity_entity,
        entity_embeddings=np.zeros((len(g.entity_names), dim), np.float32),
        relation_embeddings=np.zeros((len(g.relation_names), dim), np.float32),
        adjacency=Adjacency.build(len(g.entity_names), g.head, g.tail),
    )


def run_index_benchmark(args: argparse.Namespace) -> int:
    """Entry point of ``hoprag bench index``."""
    from hoprag.config import load_config
    from indexing.config import IndexConfig

    config = load_config(IndexConfig, args.config, args.overrides)
    result: dict[str, Any] = {
        "extraction": measure_extraction(args, config),
        "graph": measure_graph_build(args.graph_triples, config) if args.graph_triples else None,
    }
    publish("index", result, args, table=_table)
    return 0


def _table(result: dict[str, Any]) -> Iterator[str]:
    """The human-readable lines of ``hoprag bench index``'s report."""
    e = result["extraction"]
    yield (
        f"Ray Data pipeline   {e['pipeline_docs_per_min']:>7} docs/min  ({e['documents']} docs in "
        f"{e['pipeline_seconds']} s, batch {e['batch_size']}, {e['concurrency']} actor(s), incl. start-up)"
    )
    yield (
        f"sequential loop     {e['sequential_docs_per_min']:>7} docs/min  ({e['sequential_documents']} docs in "
        f"{e['sequential_seconds']} s, batch 1, model load excluded)"
    )
    yield (f"speed-up            {e['speedup']:>7}x")
    yield (f"peak RSS            {e['peak_rss_mb']:>7} MB (driver + Ray workers)")
    yield (
        f"index size          {e['index_kb_per_1k_triples']:>7} KB per 1k triples ({e['triples']} triples)"
    )
    if result["graph"]:
        g = result["graph"]
        yield (
            f"graph build         {g['graph_build_seconds']:>7} s for {g['input_triples']} triples "
            f"({g['unique_triples']} unique, {g['entities']} entities, peak {g['graph_peak_rss_mb']} MB)"
        )
        yield (
            f"index size at scale {g['index_kb_per_1k_triples']:>7} KB per 1k triples ({g['index_mb']} MB, "
            "embeddings at 384-d)"
        )
        yield (
            f"entity embedding    {g['embedder_entities_per_second']:>7} entities/s "
            f"(~{g['embedding_seconds_extrapolated']} s for those entities, extrapolated)"
        )
