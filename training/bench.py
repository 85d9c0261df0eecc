"""``hoprag bench train``: GLM training throughput and retrieval latency, each with its baseline.

1. Training throughput (subgraphs/s, tokens/s) with 1 and with 2 Ray Train CPU workers, same
   index, config and number of steps, in one run.
2. Retrieval latency per question, split into sampling, Levi tokenization, forward and ranking, at
   ``max_triplets`` 100 / 300 / 600 with the embedded GLM.
3. Subgraph sampling time on random KGs of 10k and 1M triples with the same mean degree: the
   sampler's cost should not grow with the KG.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np


def measure_training(index_dir: Path, workdir: Path, steps: int) -> dict[str, Any]:
    from hoprag.ray_runtime import init_ray
    from training.config import TrainConfig
    from training.trainer import run_training

    init_ray()
    out: dict[str, Any] = {}
    for workers in (1, 2):
        run = workdir / f"workers-{workers}"
        shutil.rmtree(run, ignore_errors=True)
        config = TrainConfig.model_validate(
            {
                "glm": {"sampler": {"max_triplets": 100}},
                "max_steps": steps,
                "epochs": 100,
                "validation_fraction": 0.0,
                "run": {"num_workers": workers, "checkpoint_every": 10**6},
            }
        )
        started = time.perf_counter()
        metrics = run_training(index_dir, run, config)
        out[f"workers_{workers}"] = {
            "subgraphs_per_s": round(float(metrics["subgraphs_per_s"]), 2),
            "tokens_per_s": round(float(metrics["tokens_per_s"]), 1),
            "wall_seconds": round(time.perf_counter() - started, 1),
        }
    return out


def measure_latency(index_dir: Path, questions: int) -> dict[str, Any]:
    import torch

    from hoprag.embedding import SentenceTransformerEmbedder
    from hoprag.glm.backbone import BackboneConfig, build_backbone, load_tokenizer
    from hoprag.glm.data import GLMExample, collate
    from hoprag.glm.encoder import GraphT5Encoder
    from hoprag.glm.levi import encode_levi_graph
    from hoprag.glm.model import GLMRetrieverModel
    from hoprag.glm.sampler import SamplerConfig, sample_subgraph
    from hoprag.kg.index import KGIndex
    from hoprag.retrieval.ranking import rank_documents_idf

    index = KGIndex(index_dir)
    rows = [
        r
        for r in (index.questions.to_pylist() if index.questions is not None else [])
        if r["question_entities"]
    ]
    rows = rows[:questions]
    embedder = SentenceTransformerEmbedder()
    tokenizer = load_tokenizer(BackboneConfig())
    model = GLMRetrieverModel(GraphT5Encoder(build_backbone(BackboneConfig())), embedder.dim).eval()
    vectors = embedder.encode([r["question"] for r in rows])
    indptr, entity_docs = index.entity_documents
    out: dict[str, Any] = {}
    for budget in (100, 300, 600):
        times = {"sampling": 0.0, "tokenization": 0.0, "forward": 0.0, "ranking": 0.0}
        tokens = 0
        for row, vec in zip(rows, vectors, strict=True):
            t0 = time.perf_counter()
            seeds = [i for i in (index.entity_id(e) for e in row["question_entities"]) if i is not None]
            sub = sample_subgraph(index.adjacency, seeds, SamplerConfig(max_triplets=budget))
            t1 = time.perf_counter()
            triples = [index.triple(t) for t in sub.triple_ids]
            enc = encode_levi_graph(
                triples, row["question"], tokenizer, [index.entity_names[e] for e in sub.entity_ids]
            )
            t2 = time.perf_counter()
            ex = GLMExample(enc, sub.entity_ids, vec, np.zeros(len(sub.entity_ids), np.float32), sub)
            with torch.no_grad():
                logits = model(collate([ex], tokenizer.pad_token_id, 32, 128))[0].numpy()
            t3 = time.perf_counter()
            rank_documents_idf(sub.entity_ids, logits.tolist(), indptr, entity_docs, 5)
            t4 = time.perf_counter()
            for key, dt in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
                times[key] += dt
            tokens += enc.length
        n = max(1, len(rows))
        out[f"max_triplets_{budget}"] = {
            **{f"{k}_ms": round(1000 * v / n, 2) for k, v in times.items()},
            "mean_tokens": round(tokens / n, 1),
        }
    out["questions"] = len(rows)
    return out


def measure_sampling_scaling(calls: int = 300) -> dict[str, Any]:
    from hoprag.glm.sampler import SamplerConfig, sample_subgraph
    from hoprag.kg.tables import Adjacency

    out: dict[str, Any] = {}
    rng = np.random.default_rng(0)
    for n_triples in (10_000, 1_000_000):
        n_entities = n_triples // 5  # mean degree 10
        head = rng.integers(0, n_entities, n_triples).astype(np.int32)
        tail = rng.integers(0, n_entities, n_triples).astype(np.int32)
        adj = Adjacency.build(n_entities, head, tail)
        seeds = rng.integers(0, n_entities, (calls, 2))
        cfg = SamplerConfig(max_triplets=600)
        started = time.perf_counter()
        sizes = [len(sample_subgraph(adj, s.tolist(), cfg).triple_ids) for s in seeds]
        out[f"kg_{n_triples}_triples"] = {
            "ms_per_subgraph": round(1000 * (time.perf_counter() - started) / calls, 3),
            "mean_triples": round(float(np.mean(sizes)), 1),
        }
    return out


def run_train_benchmark(args: argparse.Namespace) -> int:
    """Entry point of ``hoprag bench train``."""
    import psutil

    from hoprag.kg.index import KGIndex
    from hoprag.kg.store import KGIndexError

    try:
        KGIndex(args.index)
    except KGIndexError as exc:
        print(f"hoprag: {exc} (build one with `hoprag demo --train-steps 0`)")
        return 2
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"{round(psutil.virtual_memory().total / 2**30)} GiB, Python {platform.python_version()}",
        "sampling": measure_sampling_scaling(),
        "latency": measure_latency(args.index, args.questions),
        "training": measure_training(args.index, args.workdir, args.steps) if args.steps else None,
    }
    print(json.dumps(result, indent=None if args.json else 2))
    return 0
