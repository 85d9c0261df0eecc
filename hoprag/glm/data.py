"""From a processed question and the KG index to GLM training/inference examples and batches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from hoprag.glm.levi import LeviEncoding, bucket_ids, encode_levi_graph, pad_batch
from hoprag.glm.model import GLMBatch
from hoprag.glm.sampler import SamplerConfig, Subgraph, sample_subgraph
from hoprag.kg.index import KGIndex


@dataclass
class GLMExample:
    """One question's encoded subgraph; ``entity_ids[i]`` is the KG id of concept ``i``.

    ``subgraph`` is the sampled subgraph (None for examples rebuilt from encoded columns, as the
    streaming training path does: :func:`collate` does not need it)."""

    encoding: LeviEncoding
    entity_ids: list[int]
    question_vector: np.ndarray
    labels: np.ndarray  # float32 [len(entity_ids)]
    subgraph: Subgraph | None = field(default=None, repr=False)
    positives_outside_subgraph: int = 0


def build_example(
    index: KGIndex,
    question: str,
    seed_entities: Sequence[str],
    question_vector: np.ndarray,
    tokenizer: Any,
    sampler: SamplerConfig,
    supporting_entities: Sequence[str] = (),
) -> GLMExample:
    """Sample the seeds' subgraph and encode it with the question.

    Every entity of the subgraph is a concept node, including seeds without any triple, so they
    are scored too. Supporting entities outside the subgraph cannot be scored; they are counted
    (``positives_outside_subgraph``) and left out of the labels.
    """
    seed_ids = [i for i in (index.entity_id(s) for s in seed_entities) if i is not None]
    sub = sample_subgraph(index.adjacency, seed_ids, sampler)
    entity_ids = sub.entity_ids
    names = [index.entity_names[e] for e in entity_ids]
    triples = [index.triple(t) for t in sub.triple_ids]
    encoding = encode_levi_graph(triples, question, tokenizer, concepts=names)
    wanted = {index.entity_id(s) for s in supporting_entities} - {None}
    labels = np.array([1.0 if e in wanted else 0.0 for e in entity_ids], dtype=np.float32)
    return GLMExample(
        encoding=encoding,
        entity_ids=entity_ids,
        question_vector=np.asarray(question_vector, dtype=np.float32),
        labels=labels,
        subgraph=sub,
        positives_outside_subgraph=len(wanted - set(entity_ids)),
    )


def collate(
    examples: Sequence[GLMExample],
    pad_token_id: int,
    num_buckets: int,
    max_distance: int,
    global_graph: bool = True,
    pad_to_multiple_of: int = 1,
) -> GLMBatch:
    """Pad a list of examples into one :class:`GLMBatch` (bucket ids and pooling built here); the
    token axis is padded to a multiple of ``pad_to_multiple_of`` (padding is masked out)."""
    padded = pad_batch([e.encoding for e in examples], pad_token_id, pad_to_multiple_of)
    buckets, attention = bucket_ids(
        padded["positions"], padded["kinds"], num_buckets, max_distance, global_graph
    )
    n_tokens = padded["input_ids"].shape[1]
    n_entities = max((len(e.entity_ids) for e in examples), default=0)
    pooling = np.zeros((len(examples), n_entities, n_tokens), dtype=np.float32)
    entity_mask = np.zeros((len(examples), n_entities), dtype=bool)
    labels = np.zeros((len(examples), n_entities), dtype=np.float32)
    for b, ex in enumerate(examples):
        for e, (start, end) in enumerate(ex.encoding.concept_spans):
            pooling[b, e, start:end] = 1.0 / (end - start)
        entity_mask[b, : len(ex.entity_ids)] = True
        labels[b, : len(ex.labels)] = ex.labels
    return GLMBatch(
        input_ids=torch.as_tensor(padded["input_ids"]),
        node_positions=torch.as_tensor(padded["node_positions"], dtype=torch.long),
        buckets=buckets,
        attention=attention,
        pooling=torch.as_tensor(pooling),
        entity_mask=torch.as_tensor(entity_mask),
        question_vectors=torch.as_tensor(np.stack([e.question_vector for e in examples])),
        labels=torch.as_tensor(labels),
    )
