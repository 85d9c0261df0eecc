"""Each retriever family's encoded columns: a training question's sampled subgraph as plain numpy
columns (what the Ray Data stage emits and the workers collate), and back into examples.

:mod:`training.families` hands these to the shared training code; this module knows nothing of
streaming or the training loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from training.config import TrainConfig

if TYPE_CHECKING:
    from training.trainset import TrainSet

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
