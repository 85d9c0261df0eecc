"""``hoprag bench train``'s retrieval-latency sections: per question on a random KG, split into
stages (sampling, Levi encoding, collate, the encoder's parts, scoring, ranking), by subgraph size
and by GLM backbone, the backbones taking turns on the same subgraphs."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

import numpy as np


def random_kg(
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


def random_entity_docs(n_entities: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
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
    adj, names, relations, head, relation, tail = random_kg(100_000, mean_degree=40)
    rng = np.random.default_rng(1)
    n_entities = len(names)
    indptr, entity_docs = random_entity_docs(n_entities, rng)
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

    adj, names, relations, head, relation, tail = random_kg(100_000, mean_degree=40)
    rng = np.random.default_rng(2)
    indptr, entity_docs = random_entity_docs(len(names), rng)
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
