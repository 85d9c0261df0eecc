"""``hoprag bench train``: GLM/GNN training throughput and retrieval latency, each with its baseline.

1. Training throughput (subgraphs/s, tokens/s) with 1 and with 2 Ray Train CPU workers, same
   index, config and number of steps, in one run.
2. Retrieval latency per question, split into sampling, Levi tokenization, forward and ranking, at
   ``max_triplets`` 100 / 300 / 600 with the embedded GLM, on a 100k-triple random KG (the sample
   KG is too sparse for subgraphs to reach these budgets).
3. Retrieval latency of each GLM backbone (default: the embedded 4-layer T5 and MiniLM) at 100
   triples, for one question and for a batch of ``GLMSettings.batch_size`` questions: the backbones
   take turns on the same subgraphs (interleaved, so a busy machine slows both alike), each stage
   timed separately (median and p90): sampling, Levi encoding, collate (padding, bucket ids,
   pooling), the encoder's bias/mask construction, embedding, attention (and its q/k/v/o
   projections), feed-forward, the rest of the encoder, entity scoring and document ranking.
   Untrained GLMs built from config (weights do not change the cost).
4. GNN retrieval latency (GFM-RAG's NBFNet) per question on random KGs of 10k and 1M triples, next
   to the MiniLM GLM on the same subgraphs (``--gnn``); with ``--retrievers glm gnn`` section 1
   measures the GNN's training throughput too.
5. Subgraph sampling time on random KGs of 10k and 1M triples with the same mean degree: the
   sampler's cost should not grow with the KG.
"""

from __future__ import annotations

import argparse
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness import publish
from benchmarks.retrieval_latency import (
    StageTimer,
    measure_backbone_latency,
    measure_latency,
    paired_ratio,
    random_entity_docs,
    random_kg,
    sample_total,
    summarize_latency,
)


def measure_training(
    index_dir: Path, workdir: Path, steps: int, retrievers: Sequence[str] = ("glm",)
) -> dict[str, Any]:
    """Training throughput of each retriever (``glm``: the embedded GLM; ``gnn``: the GNN baseline)
    with 1 and 2 workers, same index, steps and 100-triple subgraphs. Keys: ``workers_N`` for the
    GLM (as before), ``gnn_workers_N`` for the GNN."""
    from hoprag.ray_runtime import init_ray
    from training.config import TrainConfig
    from training.trainer import run_training

    init_ray()
    out: dict[str, Any] = {}
    for retriever, workers in ((r, w) for r in retrievers for w in (1, 2)):
        key = f"workers_{workers}" if retriever == "glm" else f"{retriever}_workers_{workers}"
        run = workdir / key
        shutil.rmtree(run, ignore_errors=True)
        config = TrainConfig.model_validate(
            {
                "retriever": retriever,
                retriever: {"sampler": {"max_triplets": 100}},
                "max_steps": steps,
                "epochs": 100,
                "validation_fraction": 0.0,
                "run": {"num_workers": workers, "checkpoint_every": 10**6},
            }
        )
        started = time.perf_counter()
        metrics = run_training(index_dir, run, config)
        out[key] = {
            "subgraphs_per_s": round(float(metrics["subgraphs_per_s"]), 2),
            **(
                {"tokens_per_s": round(float(metrics["tokens_per_s"]), 1)}
                if "tokens_per_s" in metrics
                else {}
            ),
            "wall_seconds": round(time.perf_counter() - started, 1),
        }
    return out


def measure_gnn_latency(
    questions: int,
    kg_sizes: Sequence[int] = (10_000, 1_000_000),
    max_triplets: int = 100,
    glm_backbone: str = "minilm",
) -> dict[str, Any]:
    """Per-question retrieval latency of the GNN (GFM-RAG's NBFNet, 6 × 512) on random KGs of each
    size, next to a GLM on the same sampled subgraphs (taking turns, alternating order).

    Stages: sampling, layout (GNN: local arrays; GLM: Levi encoding and collate), forward, ranking.
    Question vectors are random (the question embedder costs the same for both); relation vectors
    are random unit vectors, one per relation of the KG (what the index stores).
    """
    import torch

    from hoprag.glm.backbone import BackboneConfig, build_graph_encoder, load_tokenizer
    from hoprag.glm.model import GLMRetrieverModel
    from hoprag.glm.sampler import SamplerConfig
    from hoprag.gnn.model import QueryNBFNet
    from hoprag.gnn.settings import GNNSettings

    rng = np.random.default_rng(3)
    gnn = QueryNBFNet(GNNSettings()).eval()
    config = BackboneConfig(model=glm_backbone)
    glm = GLMRetrieverModel(build_graph_encoder(config), 384).eval()
    tokenizer = load_tokenizer(config)
    sampler = SamplerConfig(max_triplets=max_triplets)
    out: dict[str, Any] = {
        "max_triplets": max_triplets,
        "torch_threads": torch.get_num_threads(),
        "gnn_parameters": sum(p.numel() for p in gnn.parameters()),
        "glm_backbone": glm_backbone,
    }
    for n_triples in kg_sizes:
        out[f"kg_{n_triples}_triples"] = _gnn_and_glm_latency(
            n_triples, questions, gnn, glm, tokenizer, sampler, rng, f"glm_{glm_backbone}"
        )
    return out


def _gnn_and_glm_latency(
    n_triples: int,
    questions: int,
    gnn: Any,
    glm: Any,
    tokenizer: Any,
    sampler: Any,
    rng: np.random.Generator,
    glm_label: str,
) -> dict[str, Any]:
    """One KG size of :func:`measure_gnn_latency`."""
    import torch

    from hoprag.glm.data import GLMExample
    from hoprag.glm.data import collate as glm_collate
    from hoprag.glm.levi import encode_levi_graph
    from hoprag.glm.sampler import sample_subgraph
    from hoprag.gnn.data import collate as gnn_collate
    from hoprag.gnn.data import layout_subgraph
    from hoprag.retrieval.ranking import rank_documents_idf

    adj, names, relations, head, relation, tail = random_kg(n_triples)
    indptr, entity_docs = random_entity_docs(len(names), rng)
    rel_vectors = rng.normal(size=(len(relations), 384)).astype(np.float32)
    rel_vectors /= np.linalg.norm(rel_vectors, axis=1, keepdims=True)
    seeds = rng.integers(0, len(names), (questions + 1, 2))
    vectors = rng.normal(size=(questions + 1, 384)).astype(np.float32)
    timer = StageTimer()
    triples_seen: list[int] = []

    def run_gnn(i: int) -> None:
        with timer.stage("sampling"):
            sub = sample_subgraph(adj, [int(s) for s in seeds[i]], sampler)
        with timer.stage("layout"):
            weights = np.isin(sub.entity_ids, seeds[i]).astype(np.float32)
            ex = layout_subgraph(sub, (head, relation, tail), rel_vectors, weights, vectors[i], set())
            batch = gnn_collate([ex])
        with timer.stage("forward"), torch.no_grad():
            logits = gnn(batch)[0].numpy()
        with timer.stage("ranking"):
            rank_documents_idf(sub.entity_ids, logits.tolist(), indptr, entity_docs, 5)
        triples_seen.append(len(sub.triple_ids))

    def run_glm(i: int) -> None:
        with timer.stage("sampling"):
            sub = sample_subgraph(adj, [int(s) for s in seeds[i]], sampler)
        with timer.stage("layout"):
            triples = [(names[head[t]], relations[relation[t]], names[tail[t]]) for t in sub.triple_ids]
            text = f"What connects {names[seeds[i][0]]} and {names[seeds[i][1]]}?"
            enc = encode_levi_graph(triples, text, tokenizer, [names[e] for e in sub.entity_ids])
            ex = GLMExample(enc, sub.entity_ids, vectors[i], np.zeros(len(sub.entity_ids), np.float32), sub)
            batch = glm_collate(
                [ex], tokenizer.pad_token_id, glm.encoder.num_buckets, glm.encoder.max_distance
            )
        with timer.stage("forward"), torch.no_grad():
            logits = glm(batch)[0].numpy()
        with timer.stage("ranking"):
            rank_documents_idf(sub.entity_ids, logits.tolist(), indptr, entity_docs, 5)

    runners = {"gnn": run_gnn, glm_label: run_glm}
    for run in runners.values():  # warm-up
        run(questions)
        timer.take()
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in runners}
    for i in range(questions):
        for name in list(runners) if i % 2 == 0 else list(runners)[::-1]:
            runners[name](i)
            samples[name].append(timer.take()["wall"])
    section: dict[str, Any] = {name: summarize_latency(s) for name, s in samples.items()}
    section["gnn_over_glm"] = paired_ratio(
        [sample_total(s) for s in samples["gnn"]], [sample_total(s) for s in samples[glm_label]]
    )
    section["mean_triples"] = round(float(np.mean(triples_seen[1:] or triples_seen)), 1)
    return section


def random_training_batches(
    count: int,
    batch_size: int,
    max_triplets: int,
    tokenizer: Any,
    question_dim: int,
    seed: int,
    pad_to_multiple_of: int = 1,
) -> tuple[list[Any], list[int]]:
    """``count`` collated training batches of ``batch_size`` subgraphs of ``max_triplets`` triples
    from a dense random KG (two hops from two seeds hold more than 600 triples), random labels (10%
    positives) and question vectors, and every subgraph's token count."""
    from hoprag.glm.data import GLMExample, collate
    from hoprag.glm.levi import encode_levi_graph
    from hoprag.glm.sampler import SamplerConfig, sample_subgraph

    adj, names, relations, head, relation, tail = random_kg(100_000, mean_degree=40)
    rng = np.random.default_rng(seed)
    sampler = SamplerConfig(max_triplets=max_triplets)
    batches, tokens = [], []
    for _ in range(count):
        examples = []
        for a, b in rng.integers(0, len(names), (batch_size, 2)):
            sub = sample_subgraph(adj, [int(a), int(b)], sampler)
            triples = [(names[head[t]], relations[relation[t]], names[tail[t]]) for t in sub.triple_ids]
            question = f"What connects {names[a]} and {names[b]}?"
            enc = encode_levi_graph(triples, question, tokenizer, [names[e] for e in sub.entity_ids])
            labels = (rng.random(len(sub.entity_ids)) < 0.1).astype(np.float32)
            vector = rng.standard_normal(question_dim).astype(np.float32)
            examples.append(GLMExample(enc, sub.entity_ids, vector, labels, sub))
            tokens.append(enc.length)
        batches.append(
            collate(examples, tokenizer.pad_token_id, 32, 128, pad_to_multiple_of=pad_to_multiple_of)
        )
    return batches, tokens


def measure_frozen_layer_steps(
    frozen_layers: Sequence[int], steps: int, batch_size: int = 2, max_triplets: int = 100
) -> dict[str, Any]:
    """One process's MiniLM GLM training step (forward, loss, backward, AdamW) by
    ``backbone.frozen_local_layers``, taking turns on the same subgraphs of the random KG.

    The step of a Ray Train worker adds DeepSpeed's gradient reduction and Ray's own threads; this
    isolates what freezing the lower layers saves in the model itself. The first step of each
    setting is a warm-up, left out.
    """
    import torch

    from hoprag.glm.backbone import BackboneConfig, build_graph_encoder, load_tokenizer
    from hoprag.glm.losses import retrieval_loss
    from hoprag.glm.model import GLMRetrieverModel

    tokenizer = load_tokenizer(BackboneConfig(model="minilm"))
    batches, tokens = random_training_batches(steps + 1, batch_size, max_triplets, tokenizer, 384, seed=3)
    trainers = {}
    for k in frozen_layers:
        torch.manual_seed(0)
        config = BackboneConfig(model="minilm", frozen_local_layers=k)
        model = GLMRetrieverModel(build_graph_encoder(config), 384).train()
        optimizer = torch.optim.AdamW(model.parameter_groups(5e-4, 1e-4))
        trainers[k] = (model, optimizer)
    seconds: dict[int, list[float]] = {k: [] for k in frozen_layers}
    for i, batch in enumerate(batches):
        for k in frozen_layers if i % 2 == 0 else list(frozen_layers)[::-1]:
            model, optimizer = trainers[k]
            started = time.perf_counter()
            retrieval_loss(model(batch), batch.labels, batch.entity_mask).backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if i:
                seconds[k].append(time.perf_counter() - started)
    first = frozen_layers[0]
    return {
        "steps": steps,
        "batch_size": batch_size,
        "mean_tokens": round(float(np.mean(tokens)), 1),
        "torch_threads": torch.get_num_threads(),
        "by_frozen_layers": {
            str(k): {
                "median_s": round(float(np.median(seconds[k])), 3),
                "trained_parameters": sum(p.numel() for p in trainers[k][0].parameters() if p.requires_grad),
                "ratio_to_first": paired_ratio(seconds[k], seconds[first]),
            }
            for k in frozen_layers
        },
    }


def measure_sampling_scaling(calls: int = 300) -> dict[str, Any]:
    from hoprag.glm.sampler import SamplerConfig, sample_subgraph

    out: dict[str, Any] = {}
    rng = np.random.default_rng(0)
    for n_triples in (10_000, 1_000_000):
        adj, names, _, _, _, _ = random_kg(n_triples)
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

    from hoprag.glm.settings import GLMSettings
    from hoprag.kg.index import KGIndex
    from hoprag.kg.store import KGIndexError

    if args.steps:  # only training reads the index; the latency sections use a random KG
        try:
            KGIndex(args.index)
        except KGIndexError as exc:
            print(f"hoprag: {exc} (build one with `hoprag demo --train-steps 0`)")
            return 2
    batch_size = args.batch_size or GLMSettings().batch_size
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    result = {
        "sampling": measure_sampling_scaling(),
        "latency": measure_latency(args.questions, args.budgets) if args.budgets else None,
        "backbone_latency": measure_backbone_latency(args.backbones, args.questions, batch_size)
        if args.backbones
        else None,
        "gnn_latency": measure_gnn_latency(args.questions) if args.gnn else None,
        "frozen_layer_steps": measure_frozen_layer_steps(args.frozen_local_layers, args.frozen_steps)
        if args.frozen_local_layers
        else None,
        "training": measure_training(args.index, args.workdir, args.steps, args.retrievers)
        if args.steps
        else None,
    }
    publish("train", result, args)
    return 0
