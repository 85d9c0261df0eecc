"""From a processed question and the KG index to GNN examples and batches.

An example is the question's sampled subgraph (the GLM's sampler, :mod:`hoprag.glm.sampler`) as
local arrays: entities ``0..n-1`` (sorted KG ids), one edge per triple in each direction
(head → tail with the relation's vector, tail → head with its negation: GFM-RAG's ``inverse``
relation features), the relations' sentence vectors, the seed weights and the labels. A batch is
the disjoint union of its examples' subgraphs (node and relation ids offset), so message passing
runs once over all of them with no padding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from hoprag.glm.sampler import SamplerConfig, Subgraph, sample_subgraph
from hoprag.kg.index import KGIndex


@dataclass
class GNNExample:
    """One question's subgraph; ``entity_ids[i]`` is the KG id of local node ``i``."""

    entity_ids: np.ndarray  # int64 [n]
    edge_src: np.ndarray  # int64 [m]; local node ids, both directions of every triple
    edge_dst: np.ndarray  # int64 [m]
    edge_relation: np.ndarray  # int64 [m]; rows of relation_vectors (inverse edges: second half)
    relation_vectors: np.ndarray  # float32 [2r, q]; the subgraph's relations, then their negations
    seed_weights: np.ndarray  # float32 [n]; 0 for non-seeds
    question_vector: np.ndarray  # float32 [q]
    labels: np.ndarray  # float32 [n]; 1 for supporting entities
    positives_outside_subgraph: int = 0


@dataclass
class GNNBatch:
    """Tensors of a batch of examples as one disjoint graph (see :func:`collate`)."""

    edge_src: torch.Tensor  # long [M]
    edge_dst: torch.Tensor  # long [M]
    edge_relation: torch.Tensor  # long [M]
    relation_vectors: torch.Tensor  # float [R, q]
    seed_weights: torch.Tensor  # float [N]
    node_graph: torch.Tensor  # long [N]; which example each node belongs to
    node_slot: torch.Tensor  # long [N]; the node's position within its example
    question_vectors: torch.Tensor  # float [B, q]
    entity_mask: torch.Tensor  # bool [B, E]; True where slot e is one of the example's nodes
    labels: torch.Tensor  # float [B, E]

    def to(self, device: torch.device | str) -> GNNBatch:
        return GNNBatch(**{k: v.to(device) for k, v in self.__dict__.items()})


def seed_weights(index: KGIndex, entity_ids: Sequence[int], seeds: Sequence[int], mode: str) -> np.ndarray:
    """Initial weight of each node: 0 unless a seed; a seed's is 1, or with ``idf`` 1 / the number of
    documents it occurs in (GFM-RAG's ``init_nodes_weight``; 1 for an entity in no document)."""
    seed_set = {int(s) for s in seeds}
    weights = np.zeros(len(entity_ids), dtype=np.float32)
    indptr = index.entity_documents[0] if mode == "idf" else None
    for i, e in enumerate(entity_ids):
        if int(e) not in seed_set:
            continue
        df = int(indptr[e + 1] - indptr[e]) if indptr is not None else 0
        weights[i] = 1.0 / df if df > 0 else 1.0
    return weights


def build_example(
    index: KGIndex,
    seed_entities: Sequence[str],
    question_vector: np.ndarray,
    sampler: SamplerConfig,
    seed_weighting: str = "idf",
    supporting_entities: Sequence[str] = (),
) -> GNNExample:
    """Sample the seeds' subgraph (the GLM's sampler) and lay it out for message passing.

    Supporting entities outside the subgraph cannot be scored; they are counted
    (``positives_outside_subgraph``) and left out of the labels.
    """
    seed_ids = [i for i in (index.entity_id(s) for s in seed_entities) if i is not None]
    sub = sample_subgraph(index.adjacency, seed_ids, sampler)
    wanted = {index.entity_id(s) for s in supporting_entities} - {None}
    ex = layout_subgraph(
        sub,
        (index.head, index.relation, index.tail),
        index.relation_embeddings,
        seed_weights(index, sub.entity_ids, seed_ids, seed_weighting),
        question_vector,
        wanted,
    )
    ex.positives_outside_subgraph = len(wanted - set(sub.entity_ids))
    return ex


def layout_subgraph(
    sub: Subgraph,
    triples: tuple[np.ndarray, np.ndarray, np.ndarray],
    relation_embeddings: np.ndarray,
    node_weights: np.ndarray,
    question_vector: np.ndarray,
    positives: set[int],
) -> GNNExample:
    """A sampled subgraph as local arrays; ``triples``: the KG's ``(head, relation, tail)`` id arrays,
    ``relation_embeddings``: its relation vectors, ``node_weights``: the seed weight of each of the
    subgraph's entities (sorted ids), ``positives``: KG ids of the supporting entities."""
    head, relation, tail = triples
    entity_ids = np.asarray(sub.entity_ids, dtype=np.int64)
    local = {int(e): i for i, e in enumerate(entity_ids)}
    tids = np.asarray(sub.triple_ids, dtype=np.int64)
    heads = np.asarray([local[int(h)] for h in head[tids]], dtype=np.int64)
    tails = np.asarray([local[int(t)] for t in tail[tids]], dtype=np.int64)
    relations, rel_local = np.unique(np.asarray(relation[tids], dtype=np.int64), return_inverse=True)
    vectors = np.asarray(relation_embeddings[relations], dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[1] != len(question_vector):
        raise ValueError(
            f"{vectors.shape[-1]}-d relation vectors do not match {len(question_vector)}-d question vectors: "
            "the index and the GNN's question embedder must be the same model"
        )
    r = len(relations)
    return GNNExample(
        entity_ids=entity_ids,
        edge_src=np.concatenate([heads, tails]),
        edge_dst=np.concatenate([tails, heads]),
        edge_relation=np.concatenate([rel_local, rel_local + r]).astype(np.int64),
        relation_vectors=np.concatenate([vectors, -vectors]),
        seed_weights=np.asarray(node_weights, dtype=np.float32),
        question_vector=np.asarray(question_vector, dtype=np.float32),
        labels=np.asarray([1.0 if int(e) in positives else 0.0 for e in entity_ids], dtype=np.float32),
    )


def collate(examples: Sequence[GNNExample]) -> GNNBatch:
    """The disjoint union of the examples' subgraphs as one :class:`GNNBatch`.

    Raises ``ValueError`` when an example's relation vectors are not as wide as its question
    vector (an index embedded by another model than the question embedder)."""
    for ex in examples:
        q = len(ex.question_vector)
        if ex.relation_vectors.ndim != 2 or (len(ex.relation_vectors) and ex.relation_vectors.shape[1] != q):
            raise ValueError(
                f"relation vectors of shape {ex.relation_vectors.shape} do not match {q}-d question "
                "vectors: the index and the GNN's question embedder must be the same model"
            )
    node_offset = rel_offset = 0
    src, dst, rel, vectors, graph, slot = [], [], [], [], [], []
    n_max = max((len(ex.entity_ids) for ex in examples), default=0)
    labels = np.zeros((len(examples), n_max), dtype=np.float32)
    mask = np.zeros((len(examples), n_max), dtype=bool)
    for b, ex in enumerate(examples):
        n = len(ex.entity_ids)
        src.append(ex.edge_src + node_offset)
        dst.append(ex.edge_dst + node_offset)
        rel.append(ex.edge_relation + rel_offset)
        vectors.append(ex.relation_vectors)
        graph.append(np.full(n, b, dtype=np.int64))
        slot.append(np.arange(n, dtype=np.int64))
        labels[b, :n] = ex.labels
        mask[b, :n] = True
        node_offset += n
        rel_offset += len(vectors[-1])

    def cat(parts: list[np.ndarray], dtype: type) -> torch.Tensor:
        return torch.as_tensor(np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype))

    q = len(examples[0].question_vector) if examples else 0
    return GNNBatch(
        edge_src=cat(src, np.int64),
        edge_dst=cat(dst, np.int64),
        edge_relation=cat(rel, np.int64),
        relation_vectors=torch.as_tensor(
            np.concatenate(vectors).astype(np.float32) if vectors else np.zeros((0, q), np.float32)
        ),
        seed_weights=cat([ex.seed_weights for ex in examples], np.float32),
        node_graph=cat(graph, np.int64),
        node_slot=cat(slot, np.int64),
        question_vectors=torch.as_tensor(
            np.stack([ex.question_vector for ex in examples]) if examples else np.zeros((0, 0), np.float32)
        ),
        entity_mask=torch.as_tensor(mask),
        labels=torch.as_tensor(labels),
    )
