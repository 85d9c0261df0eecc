"""Training data: the indexes, how an epoch mixes their questions, and their encoded subgraphs.

An *epoch plan* is a pure function of (per-index training-question counts, weights, seed, epoch):
a list of ``(index, row)`` pairs, ``row`` being a position in that index's training questions
(:func:`training.trainset.split_questions`). Both ways of feeding the workers use the same plan and
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
from dataclasses import dataclass
from typing import Any

import numpy as np

from training.config import TrainConfig
from training.families import family_of
from training.question_vectors import PrecomputedQuestionEmbedder, question_embedder_config
from training.trainset import SourceInfo, TrainDataError, TrainSet

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


# -- encoding ------------------------------------------------------------------------------------


def encode_rows(
    trainset: TrainSet, pairs: Sequence[tuple[int, int]], resources: Any, embedder: Any, config: TrainConfig
) -> dict[str, list[Any]]:
    """Sample and encode the subgraphs of the training questions ``pairs`` (``(index, row)``) into
    the encoded columns of the run's retriever family (one list entry per question; ``resources``:
    what the family's encoding needs, e.g. the GLM's tokenizer)."""
    vectors = embedder.encode([trainset.train[i][r]["question"] for i, r in pairs])
    return family_of(config).encode_rows(trainset, pairs, resources, vectors, config)


def examples_from_columns(batch: dict[str, Any], config: TrainConfig) -> list[Any]:
    """The examples of a batch of encoded columns, for the run's retriever family."""
    return family_of(config).examples_from_columns(batch)


class SubgraphEncoder:
    """Ray Data ``map_batches`` stage: plan rows (``epoch``, ``index``, ``row``) → encoded subgraphs.

    The indexes, the family's encoding resources (the GLM's tokenizer) and the run's question
    vectors (an object-store reference to the driver's :class:`~training.question_vectors.QuestionVectors`)
    are loaded once per actor in ``__init__``; ``__call__`` is a pure function of the batch (the
    sampler is seeded per question).
    """

    def __init__(self, config: dict[str, Any], sources: list[dict[str, Any]], question_vectors: Any) -> None:
        import ray
        import torch

        torch.set_num_threads(1)
        self.config = TrainConfig.model_validate(config)
        family = family_of(self.config)
        self.trainset = TrainSet([SourceInfo(**s) for s in sources], self.config)
        self.resources = family.load_encoding_resources(self.config)
        self.embedder = PrecomputedQuestionEmbedder(
            ray.get(question_vectors), question_embedder_config(self.config)
        )

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        pairs = [(int(i), int(r)) for i, r in zip(batch["index"], batch["row"], strict=True)]
        return encode_rows(self.trainset, pairs, self.resources, self.embedder, self.config)


def build_train_dataset(
    sources: Sequence[SourceInfo],
    config: TrainConfig,
    epochs: range,
    geometry: EpochGeometry,
    env_vars: dict[str, str],
    question_vectors: Any,
) -> Any:
    """The streaming training dataset: plan rows of ``epochs`` → :class:`SubgraphEncoder` actors
    (``question_vectors``: the object-store reference to the run's question vectors)."""
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
            "question_vectors": question_vectors,
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
