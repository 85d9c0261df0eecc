"""From documents + extraction records to KG tables (no LLM): normalization, dedup, synonyms, CSR.

Everything here is vectorized over triples so graphs with millions of triples build in seconds.
Entity ids are positions in the sorted list of normalized names, so the same document set always
yields the same index (a resumed build equals an uninterrupted one).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from hoprag.embedding import Embedder, embed_with_reuse, top_k_cosine
from hoprag.kg.tables import (
    EQUIVALENT,
    KIND_EQUIVALENT,
    KIND_EXTRACTED,
    Adjacency,
    KGTables,
    document_passage,
    triple_texts,
)
from hoprag.text import normalize_entity
from indexing.config import MemoryGraphConfig, SynonymConfig
from indexing.corpus import Document
from indexing.theses import build_theses

logger = logging.getLogger(__name__)

_SPACES = re.compile(r"\s+")


def normalize_relation(relation: str) -> str:
    """Relations keep their words (they carry meaning for the GLM) but lose case and extra spaces."""
    return _SPACES.sub(" ", relation.strip().lower())


@dataclass
class PreviousState:
    """What an incremental build reuses from the previous snapshot, keyed by name (entities,
    relations), by triple text (triples) and by passage (documents)."""

    entity_vectors: dict[str, np.ndarray] = field(default_factory=dict)
    relation_vectors: dict[str, np.ndarray] = field(default_factory=dict)
    triple_vectors: dict[str, np.ndarray] = field(default_factory=dict)
    document_vectors: dict[str, np.ndarray] = field(default_factory=dict)
    thesis_vectors: dict[str, np.ndarray] = field(default_factory=dict)
    equivalent_pairs: set[tuple[str, str]] = field(default_factory=set)


def synonym_pairs(
    vectors: np.ndarray, query_ids: Sequence[int], config: SynonymConfig
) -> set[tuple[int, int]]:
    """Undirected entity pairs (a < b) whose cosine similarity is ≥ ``threshold`` among the top-k.

    GFM-RAG normalizes a candidate's score by the query's score against itself; for the
    L2-normalized embeddings used here self-similarity is 1, so the rule is plain cosine ≥ 0.8.
    Only ``query_ids`` are searched, which is what makes incremental adds cheap.
    """
    if not config.enabled or len(query_ids) == 0 or len(vectors) < 2:
        return set()
    queries = vectors[np.asarray(query_ids)]
    idx, sims = top_k_cosine(queries, vectors, config.top_k + 1)
    self_sim = np.einsum("ij,ij->i", queries, queries)[:, None]
    normalized = sims / np.maximum(self_sim, 1e-12)
    q_ids = np.asarray(query_ids)[:, None].repeat(idx.shape[1], axis=1)
    keep = (normalized >= config.threshold) & (idx != q_ids)
    a, b = q_ids[keep], idx[keep]
    return {(int(min(x, y)), int(max(x, y))) for x, y in zip(a.tolist(), b.tolist(), strict=True)}


@dataclass
class GraphStructure:
    """The model-free part of a snapshot: ids, deduplicated triples, provenance, document links."""

    entity_names: list[str]
    entity_surface: list[str]
    relation_names: list[str]
    head: np.ndarray
    relation: np.ndarray
    tail: np.ndarray
    triple_doc_ids: list[list[int]]
    doc_entity_doc: np.ndarray
    doc_entity_entity: np.ndarray
    entity_num_docs: np.ndarray


def build_graph_structure(
    num_documents: int,
    doc_triples: Sequence[Sequence[tuple[str, str, str]]],
    doc_entities: Sequence[Sequence[str]],
    extra_relations: Sequence[str] = (),
    unattributed_triples: Sequence[tuple[str, str, str]] = (),
) -> GraphStructure:
    """Normalize, assign ids, deduplicate triples with their provenance, link documents to entities.

    ``unattributed_triples`` are triples no document states (a pre-built graph's edges whose
    documents are unknown): they get no provenance and no document links unless a document
    states them too.
    """
    # Flatten (document, subject, relation, object) once; everything after is array work.
    # Unattributed triples get the out-of-range document id ``num_documents``, dropped below.
    lengths = np.fromiter((len(ts) for ts in doc_triples), dtype=np.int64, count=len(doc_triples))
    t_doc = np.concatenate(
        [
            np.repeat(np.arange(num_documents, dtype=np.int32), lengths),
            np.full(len(unattributed_triples), num_documents, dtype=np.int32),
        ]
    )
    flat = [t for ts in doc_triples for t in ts] + list(unattributed_triples)
    # Names repeat a lot across triples: normalize each distinct spelling once.
    ent_norm = {raw: normalize_entity(raw) for raw in dict.fromkeys(x for t in flat for x in (t[0], t[2]))}
    rel_norm = {raw: normalize_relation(raw) for raw in dict.fromkeys(t[1] for t in flat)}
    heads_raw = [ent_norm[t[0]] for t in flat]
    tails_raw = [ent_norm[t[2]] for t in flat]
    rels_raw = [rel_norm[t[1]] for t in flat]
    surface: dict[str, str] = {}
    for t, h, o in zip(flat, heads_raw, tails_raw, strict=True):
        surface.setdefault(h, t[0].strip())
        surface.setdefault(o, t[2].strip())
    ent_doc_pairs: list[tuple[int, str]] = []
    for d, ents in enumerate(doc_entities):
        for e in ents:
            n = normalize_entity(e)
            if n:
                surface.setdefault(n, e.strip())
                ent_doc_pairs.append((d, n))
    entity_names = sorted(surface)
    entity_index = {n: i for i, n in enumerate(entity_names)}
    relation_names = sorted(set(rels_raw) | set(extra_relations))
    relation_index = {r: i for i, r in enumerate(relation_names)}

    head = np.fromiter((entity_index[h] for h in heads_raw), dtype=np.int64, count=len(flat))
    tail = np.fromiter((entity_index[o] for o in tails_raw), dtype=np.int64, count=len(flat))
    rel = np.fromiter((relation_index[r] for r in rels_raw), dtype=np.int64, count=len(flat))
    n_e, n_r = max(1, len(entity_names)), max(1, len(relation_names))
    key = (head * n_r + rel) * n_e + tail
    uniq, inverse = np.unique(key, return_inverse=True)
    # Provenance: the sorted, unique documents stating each unique triple.
    order = np.lexsort((t_doc, inverse))
    inv_sorted, doc_sorted = inverse[order], t_doc[order]
    first = np.ones(len(order), bool)
    first[1:] = (inv_sorted[1:] != inv_sorted[:-1]) | (doc_sorted[1:] != doc_sorted[:-1])
    keep = first & (doc_sorted < num_documents)
    inv_sorted, doc_sorted = inv_sorted[keep], doc_sorted[keep]
    bounds = np.searchsorted(inv_sorted, np.arange(len(uniq) + 1)).tolist()
    docs_list = doc_sorted.tolist()
    triple_docs = [docs_list[bounds[i] : bounds[i + 1]] for i in range(len(uniq))]

    # Document ↔ entity links: arguments of the document's triples plus its extra (NER) entities.
    link_doc = np.concatenate([t_doc, t_doc, np.array([d for d, _ in ent_doc_pairs], dtype=np.int32)])
    link_ent = np.concatenate(
        [head, tail, np.array([entity_index[n] for _, n in ent_doc_pairs], dtype=np.int64)]
    ).astype(np.int64)
    stated = link_doc < num_documents
    link_key = np.unique(link_doc[stated].astype(np.int64) * n_e + link_ent[stated])
    de_ent = (link_key % n_e).astype(np.int32)
    return GraphStructure(
        entity_names=entity_names,
        entity_surface=[surface[n] for n in entity_names],
        relation_names=relation_names,
        head=(uniq // (n_r * n_e)).astype(np.int32),
        relation=((uniq // n_e) % n_r).astype(np.int32),
        tail=(uniq % n_e).astype(np.int32),
        triple_doc_ids=triple_docs,
        doc_entity_doc=(link_key // n_e).astype(np.int32),
        doc_entity_entity=de_ent,
        entity_num_docs=np.bincount(de_ent, minlength=len(entity_names)).astype(np.int32),
    )


def build_tables(
    documents: Sequence[Document],
    doc_triples: Sequence[Sequence[tuple[str, str, str]]],
    doc_entities: Sequence[Sequence[str]],
    embedder: Embedder,
    synonyms: SynonymConfig,
    previous: PreviousState | None = None,
    unattributed_triples: Sequence[tuple[str, str, str]] = (),
    memory: MemoryGraphConfig | None = None,
) -> KGTables:
    """Assemble one snapshot. ``doc_triples[i]``/``doc_entities[i]`` belong to ``documents[i]`` (doc_id i);
    ``unattributed_triples`` belong to no document (see :func:`build_graph_structure`). ``memory``
    says whether (and how) the memory graph's thesis vertices are built (default: they are)."""
    memory = memory or MemoryGraphConfig()
    previous = previous or PreviousState()
    g = build_graph_structure(
        len(documents),
        doc_triples,
        doc_entities,
        [EQUIVALENT] if synonyms.enabled else [],
        unattributed_triples,
    )
    entity_index = {n: i for i, n in enumerate(g.entity_names)}
    entity_vectors, new_entities = embed_with_reuse(g.entity_names, previous.entity_vectors, embedder)
    relation_vectors, _ = embed_with_reuse(g.relation_names, previous.relation_vectors, embedder)

    pairs = synonym_pairs(entity_vectors, new_entities, synonyms)
    for a, b in previous.equivalent_pairs:  # carried over: both ends still exist
        if a in entity_index and b in entity_index:
            pairs.add((min(entity_index[a], entity_index[b]), max(entity_index[a], entity_index[b])))
    eq = np.array(sorted(pairs), dtype=np.int32).reshape(-1, 2)
    n_extracted = len(g.head)
    kind = np.concatenate(
        [np.full(n_extracted, KIND_EXTRACTED, np.int8), np.full(len(eq), KIND_EQUIVALENT, np.int8)]
    )
    all_head = np.concatenate([g.head, eq[:, 0]])
    all_tail = np.concatenate([g.tail, eq[:, 1]])
    eq_rel = g.relation_names.index(EQUIVALENT) if synonyms.enabled else 0
    all_rel = np.concatenate([g.relation, np.full(len(eq), eq_rel, np.int32)])
    triple_docs = g.triple_doc_ids + [[] for _ in range(len(eq))]

    # Stored in the snapshot so that no reader (planner, serving replica, dense retriever) embeds
    # them again; an incremental build embeds only the texts the previous snapshot did not have.
    texts = triple_texts(g.entity_names, g.entity_surface, g.relation_names, all_head, all_rel, all_tail)
    triple_vectors, _ = embed_with_reuse(texts, previous.triple_vectors, embedder)
    passages = [document_passage(d.title, d.text) for d in documents]
    document_vectors, _ = embed_with_reuse(passages, previous.document_vectors, embedder)

    memory_started = time.perf_counter()
    theses = (
        build_theses(
            documents,
            g.doc_entity_doc,
            g.doc_entity_entity,
            g.entity_names,
            embedder,
            memory,
            previous.thesis_vectors,
        )
        if memory.theses
        else None
    )
    memory_seconds = time.perf_counter() - memory_started

    doc_table = pa.table(
        {
            "doc_id": pa.array(np.arange(len(documents), dtype=np.int32)),
            "title": pa.array([d.title for d in documents], pa.string()),
            "text": pa.array([d.text for d in documents], pa.string()),
            "content_hash": pa.array([d.content_hash for d in documents], pa.string()),
        }
    )
    return KGTables(
        documents=doc_table,
        entity_names=g.entity_names,
        entity_surface=g.entity_surface,
        entity_num_docs=g.entity_num_docs,
        relation_names=g.relation_names,
        head=all_head,
        relation=all_rel,
        tail=all_tail,
        kind=kind,
        triple_doc_ids=triple_docs,
        doc_entity_doc=g.doc_entity_doc,
        doc_entity_entity=g.doc_entity_entity,
        entity_embeddings=entity_vectors,
        relation_embeddings=relation_vectors,
        adjacency=Adjacency.build(len(g.entity_names), all_head, all_tail),
        triple_embeddings=triple_vectors,
        document_embeddings=document_vectors,
        theses=theses,
        extra={
            "new_entities": len(new_entities),
            "equivalent_edges": len(eq),
            "memory_graph_seconds": memory_seconds,
        },
    )
