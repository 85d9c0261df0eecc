"""``hoprag bench memory``: what the memory graph's thesis vertices cost, in build seconds and bytes,
beside the rest of the index.

On an index (``--index``): its documents and entity links, the same inputs ``hoprag index`` gives
the memory graph; the baseline is the snapshot's own files without the thesis files. On a bare
corpus (``--corpus``, no extraction run needed): each document's title is its one entity, so every
statement belongs to its passage's subject. That has fewer entity links than an index would, but
the same statements, vectors and dedup, which is where the time and bytes go.

Episodic vertices are the documents themselves (``documents.parquet``, already in every index):
they cost nothing extra.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness import publish


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``hoprag bench memory``'s options."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--index", type=Path, help="an index: its documents and entity links")
    source.add_argument("--corpus", type=Path, help="a corpus file (entities: the documents' titles)")
    parser.add_argument("--dedup-threshold", type=float, default=None, help="default: the index config's")
    parser.add_argument("--workdir", type=Path, default=Path("runs/bench-memory"))
    parser.add_argument("--json", action="store_true", help="one line of JSON")


def _inputs(args: argparse.Namespace) -> tuple[list[Any], np.ndarray, np.ndarray, list[str], int]:
    """(documents, doc_entity_doc, doc_entity_entity, entity_names, bytes of the index without
    theses; 0 for a corpus)."""
    from hoprag.text import normalize_entity
    from indexing.corpus import Document, read_corpus

    if args.index is not None:
        from hoprag.kg.index import KGIndex

        index = KGIndex(args.index)
        docs = [
            Document(t, x)
            for t, x in zip(
                index.documents.column("title").to_pylist(),
                index.documents.column("text").to_pylist(),
                strict=True,
            )
        ]
        links = index.doc_entities
        thesis_files = {"theses.parquet", "thesis_embeddings.npy", "thesis_ann.faiss"}
        base = sum(p.stat().st_size for p in index.snapshot.iterdir() if p.name not in thesis_files)
        return (
            docs,
            links.column("doc_id").to_numpy(),
            links.column("entity_id").to_numpy(),
            index.entity_names,
            base,
        )
    docs = list(read_corpus(args.corpus).documents)
    names = sorted({n for d in docs if (n := normalize_entity(d.title))})
    position = {n: i for i, n in enumerate(names)}
    pairs = [(i, position[n]) for i, d in enumerate(docs) if (n := normalize_entity(d.title))]
    return (
        docs,
        np.array([p[0] for p in pairs], dtype=np.int64),
        np.array([p[1] for p in pairs], dtype=np.int64),
        names,
        0,
    )


def run_memory_benchmark(args: argparse.Namespace) -> int:
    """Build the thesis vertices once, timed, write them, and report counts, seconds and bytes."""
    from hoprag.embedding import EmbedderConfig, SentenceTransformerEmbedder
    from hoprag.kg.store import write_theses
    from indexing.config import IndexConfig, MemoryGraphConfig
    from indexing.theses import build_theses, statement_candidates

    config = MemoryGraphConfig(
        **({} if args.dedup_threshold is None else {"dedup_threshold": args.dedup_threshold})
    )
    started = time.perf_counter()
    docs, link_doc, link_entity, names, base_bytes = _inputs(args)
    read_s = time.perf_counter() - started
    embedder = SentenceTransformerEmbedder(EmbedderConfig())
    embedder.encode(["warm-up"])
    started = time.perf_counter()
    texts, _, linked = statement_candidates(docs, link_doc, link_entity, names, config)
    split_s = time.perf_counter() - started
    started = time.perf_counter()
    theses = build_theses(docs, link_doc, link_entity, names, embedder, config)
    build_s = time.perf_counter() - started
    args.workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        started = time.perf_counter()
        files = write_theses(theses, Path(tmp), IndexConfig().vectors.ann_min_rows)
        write_s = time.perf_counter() - started
        sizes = {p.name: p.stat().st_size for p in files}
    results = {
        "source": str(args.index or args.corpus),
        "documents": len(docs),
        "statements": len(texts),
        "theses": len(theses),
        "merged_by_meaning": theses.merged,
        "object_links": sum(len(e) for e in theses.entity_ids),
        "mean_objects_per_statement": round(float(np.mean([len(e) for e in linked])) if linked else 0.0, 2),
        "seconds": {
            "read_inputs": round(read_s, 2),
            "split_and_link": round(split_s, 2),
            "build_total": round(build_s, 2),
            "write": round(write_s, 2),
        },
        "bytes": {**sizes, "theses_total": sum(sizes.values()), "index_without_theses": base_bytes},
        "dedup_threshold": config.dedup_threshold,
    }
    publish("memory", results, args, table=_table)
    return 0


def _table(report: dict[str, Any]) -> Iterator[str]:
    b, s = report["bytes"], report["seconds"]
    mb = 1024 * 1024
    yield "| source | documents | statements | theses (merged) | build s (split+link) | thesis MB | index MB without |"
    yield "|---|---|---|---|---|---|---|"
    yield (
        f"| {report['source']} | {report['documents']} | {report['statements']} | {report['theses']} "
        f"({report['merged_by_meaning']}) | {s['build_total']} ({s['split_and_link']}) | "
        f"{b['theses_total'] / mb:.1f} | {b['index_without_theses'] / mb:.1f} |"
    )
