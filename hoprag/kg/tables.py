"""In-memory form of one KG snapshot (columnar numpy arrays) and its on-disk layout.

Layout of an index directory::

    INDEX_DIR/
      manifest.json            points at the live snapshot; replaced atomically, written last
      snapshots/<name>/        the KG tables of one build (never modified after the manifest names it)
        documents.parquet      doc_id, title, text, content_hash
        entities.parquet       entity_id, name (normalized), surface (a seen spelling), num_docs
        relations.parquet      relation_id, name
        triples.parquet        triple_id, head, relation, tail, kind (extracted|equivalent), doc_ids
        doc_entities.parquet   doc_id, entity_id
        questions.parquet      processed benchmark questions (split, question, question_entities, ...)
        entity_embeddings.npy  float32 [entities, dim], L2-normalized (the exact NN index)
        relation_embeddings.npy
        adjacency.npz          CSR over entities, both directions: indptr, neighbor, triple_id, outgoing
      extraction_cache/*.parquet   append-only per-document LLM results (the resume cache)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
SNAPSHOTS = "snapshots"
EXTRACTION_CACHE = "extraction_cache"
EQUIVALENT = "equivalent"

KIND_EXTRACTED = 0
KIND_EQUIVALENT = 1


@dataclass
class Adjacency:
    """Compressed sparse rows over entities; each triple appears once per direction."""

    indptr: np.ndarray  # int64 [entities + 1]
    neighbor: np.ndarray  # int32 [2 * triples]
    triple_id: np.ndarray  # int32 [2 * triples]
    outgoing: np.ndarray  # bool [2 * triples]; True where the row entity is the triple's head

    @classmethod
    def build(cls, num_entities: int, head: np.ndarray, tail: np.ndarray) -> Adjacency:
        """Vectorized CSR construction (no Python loop over triples)."""
        tids = np.arange(len(head), dtype=np.int32)
        src = np.concatenate([head, tail]).astype(np.int64)
        dst = np.concatenate([tail, head]).astype(np.int32)
        tid = np.concatenate([tids, tids])
        out = np.concatenate([np.ones(len(head), bool), np.zeros(len(head), bool)])
        order = np.argsort(src, kind="stable")
        counts = np.bincount(src, minlength=num_entities) if len(src) else np.zeros(num_entities, np.int64)
        indptr = np.zeros(num_entities + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return cls(indptr, dst[order], tid[order], out[order])

    def degree(self, entity_id: int) -> int:
        return int(self.indptr[entity_id + 1] - self.indptr[entity_id])

    def neighbors(self, entity_id: int) -> tuple[np.ndarray, np.ndarray]:
        """``(neighbor_entity_ids, triple_ids)`` of all triples touching ``entity_id`` (both directions)."""
        lo, hi = self.indptr[entity_id], self.indptr[entity_id + 1]
        return self.neighbor[lo:hi], self.triple_id[lo:hi]


@dataclass
class KGTables:
    """Everything one snapshot holds, as arrays (entity/relation ids are row positions)."""

    documents: pa.Table
    entity_names: list[str]
    entity_surface: list[str]
    entity_num_docs: np.ndarray
    relation_names: list[str]
    head: np.ndarray
    relation: np.ndarray
    tail: np.ndarray
    kind: np.ndarray
    triple_doc_ids: list[list[int]]
    doc_entity_doc: np.ndarray
    doc_entity_entity: np.ndarray
    entity_embeddings: np.ndarray
    relation_embeddings: np.ndarray
    adjacency: Adjacency
    questions: pa.Table | None = None
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def num_triples(self) -> int:
        return len(self.head)
