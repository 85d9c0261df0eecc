"""``hoprag bench train``: GLM training throughput and retrieval latency, each with its baseline.

1. Training throughput (subgraphs/s, tokens/s) with 1 and with 2 Ray Train CPU workers, same
   index, config and number of steps, in one run.
2. Retrieval latency per question, split into sampling, Levi tokenization, forward and ranking, at
   ``max_triplets`` 100 / 300 / 600 with the embedded GLM, on a 100k-triple random KG (the sample
   KG is too sparse for subgraphs to reach these budgets).
3. Subgraph sampling time on random KGs of 10k and 1M triples with the same mean degree: the
   sampler's cost should not grow with the KG.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from hoprag.machine import machine_description


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


def _random_kg(
    n_triples: int, mean_degree: int = 10, seed: int = 0
) -> tuple[Any, list[str], list[str], np.ndarray, np.ndarray, np.ndarray]:
    """A random KG with readable names: adjacency, names, relations, head/relation/tail arrays."""
    from hoprag.kg.tables import Adjacency

    rng = np.random.default_rng(seed)
    n_entities = max(10, 2 * n_triples // mean_degree)
    head = rng.integers(0, n_entities, n_triples).astype(np.int32)
    tail = rng.integers(0, n_entities, n_triples).astype(np.int32)
    relation = rng.integers(0, 50, n_triples).astype(np.int32)
    words = ["halleck", "quifen", "carrow", "ulmar", "oriel", "fane", "dornwick", "ember"]
    names = [f"{words[i % 8]} {words[(i // 8) % 8]} {i}" for i in range(n_entities)]
    relations = [f"{words[i % 8]} of the {words[(i // 8) % 8]}" for i in range(50)]
    return Adjacency.build(n_entities, head, tail), names, relations, head, relation, tail


def measure_latency(questions: int) -> dict[str, Any]:
    """Per-question retrieval stages with the embedded GLM on a 100k-triple random KG."""
    import torch

    from hoprag.embedding import SentenceTransformerEmbedder
    from hoprag.glm.backbone import BackboneConfig, build_backbone, load_tokenizer
    from hoprag.glm.data import GLMExample, collate
    from hoprag.glm.encoder import GraphT5Encoder
    from hoprag.glm.levi import encode_levi_graph
    from hoprag.glm.model import GLMRetrieverModel
    from hoprag.glm.sampler import SamplerConfig, sample_subgraph
    from hoprag.retrieval.ranking import entity_document_csr, rank_documents_idf

    # dense enough that two hops from two seeds hold more than 600 triples
    adj, names, relations, head, relation, tail = _random_kg(100_000, mean_degree=40)
    rng = np.random.default_rng(1)
    n_entities = len(names)
    doc_of = rng.integers(0, n_entities // 3, n_entities)
    indptr, entity_docs = entity_document_csr(doc_of, np.arange(n_entities), n_entities)
    embedder = SentenceTransformerEmbedder()
    tokenizer = load_tokenizer(BackboneConfig())
    model = GLMRetrieverModel(GraphT5Encoder(build_backbone(BackboneConfig())), embedder.dim).eval()
    seeds = rng.integers(0, n_entities, (questions, 2))
    texts = [f"What connects {names[a]} and {names[b]}?" for a, b in seeds]
    vectors = embedder.encode(texts)
    out: dict[str, Any] = {"kg_triples": len(head), "questions": questions}
    for budget in (100, 300, 600):
        times = {"sampling": 0.0, "tokenization": 0.0, "forward": 0.0, "ranking": 0.0}
        tokens = 0
        for (a, b), text, vec in zip(seeds, texts, vectors, strict=True):
            t0 = time.perf_counter()
            sub = sample_subgraph(adj, [int(a), int(b)], SamplerConfig(max_triplets=budget))
            t1 = time.perf_counter()
            triples = [(names[head[t]], relations[relation[t]], names[tail[t]]) for t in sub.triple_ids]
            enc = encode_levi_graph(triples, text, tokenizer, [names[e] for e in sub.entity_ids])
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
        out[f"max_triplets_{budget}"] = {
            **{f"{k}_ms": round(1000 * v / questions, 2) for k, v in times.items()},
            "mean_tokens": round(tokens / questions, 1),
        }
    return out


def measure_sampling_scaling(calls: int = 300) -> dict[str, Any]:
    from hoprag.glm.sampler import SamplerConfig, sample_subgraph

    out: dict[str, Any] = {}
    rng = np.random.default_rng(0)
    for n_triples in (10_000, 1_000_000):
        adj, names, _, _, _, _ = _random_kg(n_triples)
        seeds = rng.integers(0, len(names), (calls, 2))
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

    from hoprag.kg.index import KGIndex
    from hoprag.kg.store import KGIndexError

    try:
        KGIndex(args.index)
    except KGIndexError as exc:
        print(f"hoprag: {exc} (build one with `hoprag demo --train-steps 0`)")
        return 2
    result = {
        "machine": machine_description(),
        "sampling": measure_sampling_scaling(),
        "latency": measure_latency(args.questions),
        "training": measure_training(args.index, args.workdir, args.steps) if args.steps else None,
    }
    print(json.dumps(result, indent=None if args.json else 2))
    return 0
