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
        theses.parquet         the memory graph's thesis vertices (PAI-1): thesis_id, text, doc_ids
                               (its episodes: the passages stating it), entity_ids (the object
                               vertices it mentions); absent in indexes built before issue 52 or
                               with ``memory.theses: false``
        questions.parquet      processed benchmark questions (split, question, question_entities, ...)
        entity_embeddings.npy  float32 [entities, dim], L2-normalized (read memory-mapped)
        relation_embeddings.npy
        triple_embeddings.npy  float32 [triples, dim]: "head relation tail" (surface spellings); the
                               planner's triple vectors (absent in indexes built before issue 17)
        document_embeddings.npy  float32 [documents, dim]: "title\ntext", the dense retriever's
        thesis_embeddings.npy  float32 [theses, dim]: each thesis's text (with theses.parquet)
        entity_ann.faiss       faiss IVF index (8-bit codes) over entity_embeddings.npy; likewise
        triple_ann.faiss       triple_ann / document_ann; written only for matrices of at least
        document_ann.faiss     IndexConfig.vectors.ann_min_rows rows, opened memory-mapped
        thesis_ann.faiss
        adjacency.npz          CSR over entities, both directions: indptr, neighbor, triple_id, outgoing
      extraction_cache/*.parquet   append-only per-document LLM results (the resume cache)
"""

from __future__ import annotations

from collections.abc import Iterator
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

# Vector matrices of a snapshot: NAME_embeddings.npy, and NAME_ann.faiss beside the large ones.
VECTOR_TABLES = ("entity", "triple", "document", "thesis")


def embeddings_file(name: str) -> str:
    return f"{name}_embeddings.npy"


def ann_file(name: str) -> str:
    return f"{name}_ann.faiss"


def triple_text(head: str, relation: str, tail: str) -> str:
    """What a triple's vector embeds (index build and the planner's lexical search alike)."""
    return f"{head} {relation} {tail}"


def triple_texts(
    entity_names: list[str],
    entity_surface: list[str],
    relation_names: list[str],
    head: np.ndarray,
    relation: np.ndarray,
    tail: np.ndarray,
) -> list[str]:
    """:func:`triple_text` of every triple, entities in their surface spelling (else their name)."""
    shown = [s or n for s, n in zip(entity_surface, entity_names, strict=True)]
    return [
        triple_text(shown[h], relation_names[r], shown[t])
        for h, r, t in zip(head.tolist(), relation.tolist(), tail.tolist(), strict=True)
    ]


def document_passage(title: str, text: str) -> str:
    """What a document's vector embeds (the dense retriever's passage): title, then text."""
    return f"{title}\n{text}".strip()


class TripleDocuments:
    """Triple id → its documents' ids, read-only, as CSR arrays: ``docs[t]`` is a list of ints,
    ``len(docs)`` the number of triples, and iterating yields each triple's list in id order."""

    def __init__(self, offsets: np.ndarray, doc_ids: np.ndarray) -> None:
        self.offsets = offsets
        self.doc_ids = doc_ids

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, triple_id: int) -> list[int]:
        if not -len(self) <= triple_id < len(self):
            raise IndexError(f"triple id {triple_id} out of range ({len(self)} triples)")
        triple_id %= len(self)
        return self.doc_ids[self.offsets[triple_id] : self.offsets[triple_id + 1]].tolist()

    def __iter__(self) -> Iterator[list[int]]:
        return (self[t] for t in range(len(self)))

    def __bool__(self) -> bool:
        return len(self) > 0


def id_lists(column: pa.ChunkedArray) -> TripleDocuments:
    """A parquet ``list<int>`` column as CSR arrays (no Python list per row)."""
    # A list array's offsets index its whole child array (sliced or not), so they pair with .values.
    lists = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return TripleDocuments(
        np.asarray(lists.offsets.to_numpy(zero_copy_only=False), dtype=np.int64),
        np.asarray(lists.values.to_numpy(zero_copy_only=False), dtype=np.int64),
    )


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
class Theses:
    """The memory graph's thesis vertices (PAI-1): atomic statements as hyper-edges over the object
    vertices (entities) they mention, each linked to its episodes (the documents stating it).
    Episodic vertices are the documents themselves (``documents.parquet``)."""

    texts: list[str]
    doc_ids: list[list[int]]
    entity_ids: list[list[int]]
    embeddings: np.ndarray  # float32 [theses, dim], L2-normalized
    merged: int = 0  # statements folded into another thesis with the same meaning

    def __len__(self) -> int:
        return len(self.texts)


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
    # None: not written (an index in the pre-issue-17 layout; readers compute them as before).
    triple_embeddings: np.ndarray | None = None
    document_embeddings: np.ndarray | None = None
    # None: no memory-graph theses in this snapshot (``memory.theses: false``, or an older index).
    theses: Theses | None = None
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def num_triples(self) -> int:
        return len(self.head)
