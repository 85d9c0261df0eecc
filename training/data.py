"""Training data: the indexes, how an epoch mixes their questions, and their encoded subgraphs.

An *epoch plan* is a pure function of (per-index training-question counts, weights, seed, epoch):
a list of ``(index, row)`` pairs, ``row`` being a position in that index's training questions
(:func:`training.loop.split_questions`). Both ways of feeding the workers use the same plan and
the same encoding (:class:`SubgraphEncoder`, :func:`encode_rows`):

- streaming (``data.streaming``, default): the driver builds a Ray Dataset of the plan rows of
  the epochs still to train, tagged with their index; a ``map_batches`` actor stage samples and
  encodes each question's subgraph into plain numpy columns; Ray Train splits the stream among the
  workers (``streaming_split(equal=True)``), which collate micro-batches;
- in memory: each worker encodes the rows ``plan[rank::world]`` itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from training.config import TrainConfig

# The columns of an encoded GLM example (what the map stage emits and the workers collate). The
# pairwise matrices and the concept spans are flattened (ragged 1-D arrays are plain Arrow tensors).
ENCODED_COLUMNS = (
    "index",
    "row",
    "input_ids",
    "positions",
    "kinds",
    "node_positions",
    "concept_spans",
    "entity_ids",
    "labels",
    "question_vector",
)

# The columns of an encoded GNN example (what the map stage emits and the workers collate).
GNN_COLUMNS = (
    "index",
    "row",
    "entity_ids",
    "edge_src",
    "edge_dst",
    "edge_relation",
    "relation_vectors",
    "seed_weights",
    "question_vector",
    "labels",
)


class TrainDataError(ValueError):
    """An index that cannot be trained on (missing, unreadable, no usable questions, mismatched)."""


@dataclass(frozen=True)
class SourceInfo:
    """What the driver learned about one index: enough for every worker to rebuild the epoch plans."""

    name: str
    path: str
    n_train: int
    n_val: int
    weight: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def inspect_sources(config: TrainConfig) -> list[SourceInfo]:
    """Open every index of ``config.data.indexes`` and count its usable questions.

    Raises :class:`TrainDataError` naming the index for a missing or corrupt index, one without
    processed questions or without usable training questions, and for indexes built with different
    embedders.
    """
    from hoprag.kg.index import KGIndex
    from hoprag.kg.store import KGIndexError
    from training.loop import split_questions

    if not config.data.indexes:
        raise TrainDataError("no index to train on: pass --index or set data.indexes in the config")
    out: list[SourceInfo] = []
    embedders: dict[str, str] = {}
    for source in config.data.indexes:
        label = f"index '{source.label}' ({source.path})"
        try:
            index = KGIndex(source.path)
        except (KGIndexError, OSError) as exc:
            raise TrainDataError(f"{label}: {exc}") from exc
        if index.questions is None:
            raise TrainDataError(f"{label} has no processed questions to train on")
        train, val = split_questions(index.questions.to_pylist(), config)
        if not train:
            raise TrainDataError(
                f"{label}: no '{config.train_split}' questions with linked entities and gold documents "
                "left for training"
            )
        embedders[source.label] = str(index.manifest.get("embedder"))
        if config.retriever == "gnn":
            problem = config.gnn.index_mismatch(
                label, index.manifest.get("embedder"), index.relation_embeddings.shape[1]
            )
            if problem:
                raise TrainDataError(problem)
        out.append(
            SourceInfo(source.label, str(Path(source.path).resolve()), len(train), len(val), source.weight)
        )
    if len(set(embedders.values())) > 1:
        listed = ", ".join(f"{name}: {model}" for name, model in embedders.items())
        raise TrainDataError(f"the indexes were built with different embedders ({listed}); use one")
    return out


def sources_from_params(params: dict[str, Any]) -> list[SourceInfo]:
    return [SourceInfo(**s) for s in params["sources"]]


# -- the epoch plan (pure) -------------------------------------------------------------------


def mix_counts(counts: Sequence[int], weights: Sequence[float] | None, total: int) -> list[int]:
    """How many of an epoch's ``total`` examples come from each index.

    Without weights, each index's share is its question count (``total == sum(counts)`` gives every
    question once); with weights, ``total`` is split in proportion to the weights by largest
    remainder (ties to the earlier index), so the counts always add up to ``total``.
    """
    if total < 0:
        raise ValueError("total must be >= 0")
    shares = np.asarray(counts if weights is None else weights, dtype=np.float64)
    if len(shares) == 0 or shares.sum() <= 0:
        raise ValueError("need at least one index with a positive share")
    exact = shares / shares.sum() * total
    base = np.floor(exact).astype(np.int64)
    remainder = total - int(base.sum())
    order = sorted(range(len(shares)), key=lambda i: (-(exact[i] - base[i]), i))
    for i in order[:remainder]:
        base[i] += 1
    return [int(b) for b in base]


def epoch_plan(
    counts: Sequence[int], weights: Sequence[float] | None, seed: int, epoch: int, size: int
) -> np.ndarray:
    """The ``(index, row)`` pairs of one epoch, shuffled: ``int64 [size, 2]``.

    Index ``i`` contributes ``mix_counts(counts, weights, sum(counts))[i]`` rows, drawn without
    replacement from a fresh permutation of its questions (cycling through further permutations
    when it contributes more than it has); the pairs are then shuffled together and the first
    ``size`` kept (``size`` rounds the epoch down to whole steps of every worker). Everything is
    seeded from ``(seed, epoch)``: the same arguments give the same plan on every machine.
    """
    total = int(sum(counts))
    if not 0 <= size <= total:
        raise ValueError(f"size must be within [0, {total}]")
    rng = np.random.default_rng([seed, epoch])
    parts = []
    for i, (n, take) in enumerate(zip(counts, mix_counts(counts, weights, total), strict=True)):
        if take == 0:
            continue
        cycles = math.ceil(take / n)
        rows = np.concatenate([rng.permutation(n) for _ in range(cycles)])[:take]
        parts.append(np.stack([np.full(take, i, dtype=np.int64), rows.astype(np.int64)], axis=1))
    pairs = np.concatenate(parts)
    return pairs[rng.permutation(len(pairs))][:size]


@dataclass(frozen=True)
class EpochGeometry:
    """Rows per epoch and optimizer steps per epoch: the same on every worker."""

    epoch_rows: int  # plan rows per epoch: whole steps of every worker
    batches_per_epoch: int

    @classmethod
    def of(cls, total_train: int, world: int, micro: int) -> EpochGeometry:
        per_step = world * micro
        batches = total_train // per_step
        if batches < 1:
            raise TrainDataError(
                f"{total_train} training questions cannot fill one step of {world} workers × "
                f"micro-batch {micro}; lower run.num_workers or deepspeed.micro_batch_size"
            )
        return cls(batches * per_step, batches)


def plan_table(
    sources: Sequence[SourceInfo], config: TrainConfig, epochs: range, geometry: EpochGeometry
) -> Any:
    """The plan rows of ``epochs`` as one Arrow table (``epoch``, ``index``, ``row``)."""
    import pyarrow as pa

    counts = [s.n_train for s in sources]
    weights = _weights(sources)
    chunks = [epoch_plan(counts, weights, config.seed, e, geometry.epoch_rows) for e in epochs]
    pairs = np.concatenate(chunks) if chunks else np.zeros((0, 2), dtype=np.int64)
    epoch_col = np.repeat(np.asarray(list(epochs), dtype=np.int64), geometry.epoch_rows)
    return pa.table({"epoch": epoch_col, "index": pairs[:, 0], "row": pairs[:, 1]})


def _weights(sources: Sequence[SourceInfo]) -> list[float] | None:
    if all(s.weight is not None for s in sources):
        return [float(s.weight or 0.0) for s in sources]
    return None


def worker_plan(
    sources: Sequence[SourceInfo],
    config: TrainConfig,
    epoch: int,
    geometry: EpochGeometry,
    rank: int,
    world: int,
) -> np.ndarray:
    """This worker's ``(index, row)`` pairs of ``epoch`` in the in-memory path, in step order."""
    counts = [s.n_train for s in sources]
    return epoch_plan(counts, _weights(sources), config.seed, epoch, geometry.epoch_rows)[rank::world]


# -- loading and encoding ----------------------------------------------------------------------


class TrainSet:
    """The indexes of a run with their training and validation questions (as split by the seed)."""

    def __init__(self, sources: Sequence[SourceInfo], config: TrainConfig) -> None:
        from hoprag.kg.index import KGIndex
        from training.loop import split_questions

        self.sources = list(sources)
        self.indexes = [KGIndex(s.path) for s in sources]
        self.train: list[list[dict[str, Any]]] = []
        self.val: list[list[dict[str, Any]]] = []
        for source, index in zip(sources, self.indexes, strict=True):
            if index.questions is None:
                raise TrainDataError(f"index '{source.name}' ({source.path}) has no processed questions")
            train, val = split_questions(index.questions.to_pylist(), config)
            if len(train) != source.n_train:
                raise TrainDataError(
                    f"index '{source.name}' ({source.path}) changed during training: "
                    f"{len(train)} training questions, {source.n_train} expected"
                )
            self.train.append(train)
            self.val.append(val)


def encode_rows(
    trainset: TrainSet, pairs: Sequence[tuple[int, int]], resources: Any, embedder: Any, config: TrainConfig
) -> dict[str, list[Any]]:
    """Sample and encode the subgraphs of the training questions ``pairs`` (``(index, row)``) into
    the encoded columns of the run's retriever family (one list entry per question; ``resources``:
    what the family's encoding needs, e.g. the GLM's tokenizer)."""
    from training.families import family_of

    vectors = embedder.encode([trainset.train[i][r]["question"] for i, r in pairs])
    return family_of(config).encode_rows(trainset, pairs, resources, vectors, config)


def examples_from_columns(batch: dict[str, Any], config: TrainConfig) -> list[Any]:
    """The examples of a batch of encoded columns, for the run's retriever family."""
    from training.families import family_of

    return family_of(config).examples_from_columns(batch)


def encode_glm_rows(
    trainset: TrainSet,
    pairs: Sequence[tuple[int, int]],
    tokenizer: Any,
    vectors: np.ndarray,
    config: TrainConfig,
) -> dict[str, list[Any]]:
    """The GLM's :data:`ENCODED_COLUMNS` of the training questions ``pairs``."""
    from hoprag.glm.data import build_example

    rows = [trainset.train[i][r] for i, r in pairs]
    out: dict[str, list[Any]] = {name: [] for name in ENCODED_COLUMNS}
    for (i, r), row, vector in zip(pairs, rows, vectors, strict=True):
        ex = build_example(
            trainset.indexes[i],
            row["question"],
            row["question_entities"],
            vector,
            tokenizer,
            config.glm.sampler,
            supporting_entities=row["supporting_entities"],
        )
        enc = ex.encoding
        out["index"].append(int(i))
        out["row"].append(int(r))
        out["input_ids"].append(np.asarray(enc.input_ids, dtype=np.int64))
        out["positions"].append(np.asarray(enc.positions, dtype=np.int32).ravel())
        out["kinds"].append(np.asarray(enc.kinds, dtype=np.int8).ravel())
        out["node_positions"].append(np.asarray(enc.node_positions, dtype=np.int32))
        out["concept_spans"].append(np.asarray(enc.concept_spans, dtype=np.int64).reshape(-1))
        out["entity_ids"].append(np.asarray(ex.entity_ids, dtype=np.int64))
        out["labels"].append(np.asarray(ex.labels, dtype=np.float32))
        out["question_vector"].append(np.asarray(ex.question_vector, dtype=np.float32))
    return out


def glm_examples_from_columns(batch: dict[str, Any]) -> list[Any]:
    """The :class:`~hoprag.glm.data.GLMExample` objects of a batch of :data:`ENCODED_COLUMNS`
    (what :func:`hoprag.glm.data.collate` needs; the sampled subgraph itself is not carried)."""
    from hoprag.glm.data import GLMExample
    from hoprag.glm.levi import LeviEncoding

    examples = []
    for b in range(len(batch["index"])):
        ids = np.asarray(batch["input_ids"][b], dtype=np.int64)
        n = len(ids)
        spans = np.asarray(batch["concept_spans"][b], dtype=np.int64).reshape(-1, 2)
        encoding = LeviEncoding(
            input_ids=ids,
            positions=np.asarray(batch["positions"][b], dtype=np.int32).reshape(n, n),
            kinds=np.asarray(batch["kinds"][b], dtype=np.int8).reshape(n, n),
            concept_spans=[(int(s), int(e)) for s, e in spans],
            concepts=[],
            num_graph_tokens=0,
            node_positions=np.asarray(batch["node_positions"][b], dtype=np.int32),
        )
        examples.append(
            GLMExample(
                encoding=encoding,
                entity_ids=[int(e) for e in batch["entity_ids"][b]],
                question_vector=np.asarray(batch["question_vector"][b], dtype=np.float32),
                labels=np.asarray(batch["labels"][b], dtype=np.float32),
            )
        )
    return examples


def encode_gnn_rows(
    trainset: TrainSet, pairs: Sequence[tuple[int, int]], vectors: np.ndarray, config: TrainConfig
) -> dict[str, list[Any]]:
    """The GNN's :data:`GNN_COLUMNS` of the training questions ``pairs``."""
    from hoprag.gnn.data import build_example

    out: dict[str, list[Any]] = {name: [] for name in GNN_COLUMNS}
    for (i, r), vector in zip(pairs, vectors, strict=True):
        row = trainset.train[i][r]
        ex = build_example(
            trainset.indexes[i],
            row["question_entities"],
            vector,
            config.gnn.sampler,
            config.gnn.seed_weighting,
            supporting_entities=row["supporting_entities"],
        )
        out["index"].append(int(i))
        out["row"].append(int(r))
        out["entity_ids"].append(ex.entity_ids)
        out["edge_src"].append(ex.edge_src)
        out["edge_dst"].append(ex.edge_dst)
        out["edge_relation"].append(ex.edge_relation)
        out["relation_vectors"].append(ex.relation_vectors.reshape(-1))  # ragged → 1-D
        out["seed_weights"].append(ex.seed_weights)
        out["question_vector"].append(ex.question_vector)
        out["labels"].append(ex.labels)
    return out


def gnn_examples_from_columns(batch: dict[str, Any]) -> list[Any]:
    """The :class:`~hoprag.gnn.data.GNNExample` objects of a batch of :data:`GNN_COLUMNS`."""
    from hoprag.gnn.data import GNNExample

    examples = []
    for b in range(len(batch["index"])):
        q = np.asarray(batch["question_vector"][b], dtype=np.float32)
        examples.append(
            GNNExample(
                entity_ids=np.asarray(batch["entity_ids"][b], dtype=np.int64),
                edge_src=np.asarray(batch["edge_src"][b], dtype=np.int64),
                edge_dst=np.asarray(batch["edge_dst"][b], dtype=np.int64),
                edge_relation=np.asarray(batch["edge_relation"][b], dtype=np.int64),
                relation_vectors=np.asarray(batch["relation_vectors"][b], dtype=np.float32).reshape(
                    -1, len(q)
                ),
                seed_weights=np.asarray(batch["seed_weights"][b], dtype=np.float32),
                question_vector=q,
                labels=np.asarray(batch["labels"][b], dtype=np.float32),
            )
        )
    return examples


class SubgraphEncoder:
    """Ray Data ``map_batches`` stage: plan rows (``epoch``, ``index``, ``row``) → encoded subgraphs.

    The indexes, the family's encoding resources (the GLM's tokenizer) and the question embedder
    are loaded once per actor in
    ``__init__``; ``__call__`` is a pure function of the batch (the sampler is seeded per question).
    """

    def __init__(self, config: dict[str, Any], sources: list[dict[str, Any]]) -> None:
        import torch

        from hoprag.embedding import SentenceTransformerEmbedder
        from training.families import family_of

        torch.set_num_threads(1)
        self.config = TrainConfig.model_validate(config)
        family = family_of(self.config)
        self.trainset = TrainSet([SourceInfo(**s) for s in sources], self.config)
        self.resources = family.load_encoding_resources(self.config)
        self.embedder = SentenceTransformerEmbedder(family.settings(self.config).question_embedder)

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        pairs = [(int(i), int(r)) for i, r in zip(batch["index"], batch["row"], strict=True)]
        return encode_rows(self.trainset, pairs, self.resources, self.embedder, self.config)


def build_train_dataset(
    sources: Sequence[SourceInfo],
    config: TrainConfig,
    epochs: range,
    geometry: EpochGeometry,
    env_vars: dict[str, str],
) -> Any:
    """The streaming training dataset: plan rows of ``epochs`` → :class:`SubgraphEncoder` actors."""
    import ray

    table = plan_table(sources, config, epochs, geometry)
    data = config.data
    # Blocks of a few map batches, so several actors (and the split among workers) can share the work.
    block = 4 * data.map_batch_size
    blocks = [table.slice(start, block) for start in range(0, max(table.num_rows, 1), block)]
    return ray.data.from_arrow(blocks).map_batches(
        SubgraphEncoder,
        fn_constructor_kwargs={
            "config": config.model_dump(mode="json"),
            "sources": [s.to_dict() for s in sources],
        },
        batch_size=data.map_batch_size,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=data.map_concurrency),
        num_cpus=data.map_num_cpus,
        runtime_env={"env_vars": env_vars},
    )


def iter_stream(shard: Any, micro: int, skip: int) -> Iterator[dict[str, Any]]:
    """Micro-batches of this worker's dataset shard, the first ``skip`` dropped (resume)."""
    for n, batch in enumerate(shard.iter_batches(batch_size=micro, batch_format="numpy", drop_last=True)):
        if n >= skip:
            yield batch
