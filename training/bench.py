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
import json
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from hoprag.machine import machine_description


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


def _entity_docs(n_entities: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Every entity in one of ``n_entities / 3`` random documents (what the IDF ranker reads)."""
    from hoprag.retrieval.ranking import entity_document_csr

    doc_of = rng.integers(0, n_entities // 3, n_entities)
    return entity_document_csr(doc_of, np.arange(n_entities), n_entities)


def measure_latency(questions: int, budgets: Sequence[int] = (100, 300, 600)) -> dict[str, Any]:
    """Per-question retrieval stages with the embedded GLM on a 100k-triple random KG."""
    import torch

    from hoprag.embedding import SentenceTransformerEmbedder
    from hoprag.glm.backbone import BackboneConfig, build_backbone, load_tokenizer
    from hoprag.glm.data import GLMExample, collate
    from hoprag.glm.encoder import GraphT5Encoder
    from hoprag.glm.levi import encode_levi_graph
    from hoprag.glm.model import GLMRetrieverModel
    from hoprag.glm.sampler import SamplerConfig, sample_subgraph
    from hoprag.retrieval.ranking import rank_documents_idf

    # dense enough that two hops from two seeds hold more than 600 triples
    adj, names, relations, head, relation, tail = _random_kg(100_000, mean_degree=40)
    rng = np.random.default_rng(1)
    n_entities = len(names)
    indptr, entity_docs = _entity_docs(n_entities, rng)
    embedder = SentenceTransformerEmbedder()
    tokenizer = load_tokenizer(BackboneConfig())
    model = GLMRetrieverModel(GraphT5Encoder(build_backbone(BackboneConfig())), embedder.dim).eval()
    seeds = rng.integers(0, n_entities, (questions, 2))
    texts = [f"What connects {names[a]} and {names[b]}?" for a, b in seeds]
    vectors = embedder.encode(texts)
    out: dict[str, Any] = {"kg_triples": len(head), "questions": questions}
    for budget in budgets:
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


# Stages of one retrieval in the backbone comparison, in pipeline order. The encoder's stages are
# timed with forward hooks: "attention" is every self-attention sublayer (its norm, q/k/v/o
# projections, scores, softmax and residual), "attention_projections" the q/k/v/o linears inside
# it, "feed_forward" every feed-forward sublayer (with its norm and residual), "bias" the encoder's
# attention_bias (graph-bias lookup with the mask folded in), "embedding" the token (and for BERT
# position) embeddings; "encoder_other" is what the encoder spends outside those (final norm, HF
# layer plumbing), "scoring" what the GLM spends outside the encoder (pooling, question
# projection, entity scorer).
LATENCY_STAGES = (
    "sampling",
    "levi_encoding",
    "collate",
    "bias",
    "embedding",
    "attention",
    "attention_projections",
    "feed_forward",
    "encoder_other",
    "scoring",
    "ranking",
)
# Stages inside another one (not added again when the total is formed).
NESTED_STAGES = {"attention_projections": "attention"}


class StageTimer:
    """Wall and CPU time per named stage (CPU forwards are synchronous, so hooks time them exactly).

    CPU time is the process's (all torch threads together): on a machine shared with other jobs
    it counts the work done, while wall time also counts the waits for a core.
    """

    CLOCKS: ClassVar[dict[str, Callable[[], float]]] = {"wall": time.perf_counter, "cpu": time.process_time}

    def __init__(self) -> None:
        self.seconds: dict[str, dict[str, float]] = {clock: {} for clock in self.CLOCKS}
        self._open: dict[str, list[tuple[float, ...]]] = {}

    def start(self, stage: str) -> None:
        self._open.setdefault(stage, []).append(tuple(now() for now in self.CLOCKS.values()))

    def stop(self, stage: str) -> None:
        now = tuple(now() for now in self.CLOCKS.values())
        for clock, begun, ended in zip(self.CLOCKS, self._open[stage].pop(), now, strict=True):
            totals = self.seconds[clock]
            totals[stage] = totals.get(stage, 0.0) + ended - begun

    @contextmanager
    def stage(self, stage: str) -> Iterator[None]:
        self.start(stage)
        try:
            yield
        finally:
            self.stop(stage)

    def take(self) -> dict[str, dict[str, float]]:
        """``{clock: {stage: seconds}}`` since the last ``take`` (and reset)."""
        out, self.seconds = self.seconds, {clock: {} for clock in self.CLOCKS}
        return out


def _encoder_parts(encoder: Any) -> dict[str, list[Any]]:
    """The encoder's modules per timed stage (T5 and BERT backbones)."""
    backbone = encoder.backbone
    if encoder.kind == "t5":
        blocks = backbone.encoder.block
        attention = [b.layer[0].SelfAttention for b in blocks]
        return {
            "attention": [b.layer[0] for b in blocks],
            "attention_projections": [getattr(a, n) for a in attention for n in "qkvo"],
            "feed_forward": [b.layer[1] for b in blocks],
            "embedding": [backbone.encoder.embed_tokens],
        }
    layers = backbone.encoder.layer
    return {
        "attention": [layer.attention for layer in layers],
        "attention_projections": [
            m
            for layer in layers
            for m in (layer.attention.self.query, layer.attention.self.key, layer.attention.self.value)
        ]
        + [layer.attention.output.dense for layer in layers],
        "feed_forward": [m for layer in layers for m in (layer.intermediate, layer.output)],
        "embedding": [backbone.embeddings.word_embeddings],  # replaced by embed() below
    }


def _timed_method(timer: StageTimer, stage: str, method: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        with timer.stage(stage):
            return method(*args, **kwargs)

    return timed


@contextmanager
def timed_glm(model: Any, timer: StageTimer) -> Iterator[None]:
    """Time a GLMRetrieverModel's forward by stage (hooks and wrapped methods, removed on exit)."""
    encoder = model.encoder
    handles = []

    def hook(module: Any, stage: str) -> None:
        handles.append(module.register_forward_pre_hook(lambda *_: timer.start(stage)))
        handles.append(module.register_forward_hook(lambda *_: timer.stop(stage)))

    hook(model, "model")
    hook(encoder, "encoder")
    parts = _encoder_parts(encoder)
    if encoder.kind != "t5":  # BERT embeds in GraphBertEncoder.embed (word + type + position, norm)
        parts.pop("embedding")
        encoder.embed = _timed_method(timer, "embedding", encoder.embed)
    for stage, modules in parts.items():
        for module in modules:
            hook(module, stage)
    encoder.attention_bias = _timed_method(timer, "bias", encoder.attention_bias)
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
        for name in ("attention_bias", "embed"):
            encoder.__dict__.pop(name, None)


def split_forward(seconds: dict[str, float]) -> dict[str, float]:
    """Turn the hook totals ``model`` and ``encoder`` into ``encoder_other`` and ``scoring``."""
    out = dict(seconds)
    model = out.pop("model", 0.0)
    encoder = out.pop("encoder", 0.0)
    inside = sum(out.get(s, 0.0) for s in ("bias", "embedding", "attention", "feed_forward"))
    out["encoder_other"] = max(0.0, encoder - inside)
    out["scoring"] = max(0.0, model - encoder)
    return out


def sample_total(sample: dict[str, float]) -> float:
    """One retrieval's time: the sum of its stages, not counting those nested in another."""
    return sum(v for k, v in sample.items() if k not in NESTED_STAGES)


def summarize_latency(samples: Sequence[dict[str, float]]) -> dict[str, Any]:
    """Median and p90 in ms of every stage and of the total (the top-level stages' sum) per sample.

    The total is summed per sample, so its median is not the sum of the stage medians.
    """
    if not samples:
        return {}
    stages = [s for s in LATENCY_STAGES if any(s in sample for sample in samples)]
    stages += sorted({s for sample in samples for s in sample} - set(stages))
    totals = [sample_total(sample) for sample in samples]

    def stats(values: Sequence[float]) -> dict[str, float]:
        ms = 1000 * np.asarray(values, dtype=np.float64)
        return {"median_ms": round(float(np.median(ms)), 2), "p90_ms": round(float(np.percentile(ms, 90)), 2)}

    return {
        "samples": len(samples),
        "total": stats(totals),
        "stages": {s: stats([sample.get(s, 0.0) for sample in samples]) for s in stages},
    }


def paired_ratio(numerator: Sequence[float], denominator: Sequence[float]) -> dict[str, float]:
    """Median and p90 of the per-sample ratios of two backbones timed on the same inputs in turn."""
    ratios = np.asarray(numerator, dtype=np.float64) / np.asarray(denominator, dtype=np.float64)
    return {"median": round(float(np.median(ratios)), 3), "p90": round(float(np.percentile(ratios, 90)), 3)}


def measure_backbone_latency(
    backbones: Sequence[str], questions: int, batch_size: int, max_triplets: int = 100
) -> dict[str, Any]:
    """Retrieval latency by stage of each GLM backbone on the same subgraphs, taking turns.

    ``questions`` single-question retrievals, then the same questions in full batches of
    ``batch_size``; for each sample the backbones run one after the other, in alternating order.
    """
    import torch

    from hoprag.embedding import SentenceTransformerEmbedder
    from hoprag.glm.backbone import BackboneConfig, backbone_summary, build_graph_encoder, load_tokenizer
    from hoprag.glm.data import GLMExample, collate
    from hoprag.glm.levi import encode_levi_graph
    from hoprag.glm.model import GLMRetrieverModel
    from hoprag.glm.sampler import SamplerConfig, sample_subgraph
    from hoprag.retrieval.ranking import rank_documents_idf

    adj, names, relations, head, relation, tail = _random_kg(100_000, mean_degree=40)
    rng = np.random.default_rng(2)
    indptr, entity_docs = _entity_docs(len(names), rng)
    embedder = SentenceTransformerEmbedder()
    seeds = rng.integers(0, len(names), (questions, 2))
    texts = [f"What connects {names[a]} and {names[b]}?" for a, b in seeds]
    vectors = embedder.encode(texts)
    sampler = SamplerConfig(max_triplets=max_triplets)
    models, tokenizers = {}, {}
    for name in backbones:
        config = BackboneConfig(model=name)
        models[name] = GLMRetrieverModel(build_graph_encoder(config), embedder.dim).eval()
        tokenizers[name] = load_tokenizer(config)
    timer = StageTimer()
    sizes: dict[str, list[int]] = {"triples": [], "tokens": []}

    def retrieve(name: str, rows: Sequence[int]) -> None:
        """One retrieval of questions ``rows`` as one batch, every stage timed into ``timer``."""
        model, tokenizer = models[name], tokenizers[name]
        examples = []
        for i in rows:
            with timer.stage("sampling"):
                sub = sample_subgraph(adj, [int(s) for s in seeds[i]], sampler)
            with timer.stage("levi_encoding"):
                triples = [(names[head[t]], relations[relation[t]], names[tail[t]]) for t in sub.triple_ids]
                enc = encode_levi_graph(triples, texts[i], tokenizer, [names[e] for e in sub.entity_ids])
            labels = np.zeros(len(sub.entity_ids), np.float32)
            examples.append(GLMExample(enc, sub.entity_ids, vectors[i], labels, sub))
            if name == backbones[0] and len(rows) == 1:
                sizes["triples"].append(len(sub.triple_ids))
                sizes["tokens"].append(enc.length)
        encoder = model.encoder
        with timer.stage("collate"):
            batch = collate(examples, tokenizer.pad_token_id, encoder.num_buckets, encoder.max_distance)
        with torch.no_grad(), timed_glm(model, timer):
            logits = model(batch).float().numpy()
        with timer.stage("ranking"):
            for row, ex in zip(logits, examples, strict=True):
                rank_documents_idf(ex.entity_ids, row[: len(ex.entity_ids)].tolist(), indptr, entity_docs, 5)

    # full batches only (a short last batch would be a different sample); at least one
    batches = [list(range(i, i + batch_size)) for i in range(0, questions - batch_size + 1, batch_size)]
    batches = batches or [list(range(questions))]
    for name in backbones:  # warm-up: first-call allocations and lazy imports stay out of the timings
        retrieve(name, [0])
        retrieve(name, batches[0])
        timer.take()
    out: dict[str, Any] = {
        "kg_triples": len(head),
        "max_triplets": max_triplets,
        "torch_threads": torch.get_num_threads(),
        "backbones": {name: backbone_summary(models[name].encoder) for name in backbones},
    }
    for label, groups in (("single", [[i] for i in range(questions)]), (f"batch_{batch_size}", batches)):
        samples: dict[str, dict[str, list[dict[str, float]]]] = {
            name: {clock: [] for clock in StageTimer.CLOCKS} for name in backbones
        }
        for k, rows in enumerate(groups):
            for name in backbones if k % 2 == 0 else backbones[::-1]:
                retrieve(name, rows)
                for clock, seconds in timer.take().items():
                    samples[name][clock].append(split_forward(seconds))
        section: dict[str, Any] = {"batches": len(groups), "questions_per_batch": len(groups[0])}
        for name in backbones:
            section[name] = {clock: summarize_latency(samples[name][clock]) for clock in StageTimer.CLOCKS}
        section["ratio_to_first"] = {
            name: {
                clock: paired_ratio(
                    [sample_total(s) for s in samples[name][clock]],
                    [sample_total(s) for s in samples[backbones[0]][clock]],
                )
                for clock in StageTimer.CLOCKS
            }
            for name in backbones[1:]
        }
        out[label] = section
    out["mean_triples"] = round(float(np.mean(sizes["triples"])), 1)
    out["mean_tokens"] = round(float(np.mean(sizes["tokens"])), 1)
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

    adj, names, relations, head, relation, tail = _random_kg(n_triples)
    indptr, entity_docs = _entity_docs(len(names), rng)
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

    adj, names, relations, head, relation, tail = _random_kg(100_000, mean_degree=40)
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
        "machine": machine_description(),
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
    print(json.dumps(result, indent=None if args.json else 2))
    return 0
