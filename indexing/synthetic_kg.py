"""A synthetic KG index of any size for serving benchmarks (no LLM, no embedding model).

The graph is ``hoprag bench index``'s synthetic one (entities ~ triples/5, 64 relations, 10
triples per document, each document's text its triples as sentences). Vectors are *not* MiniLM
embeddings: clustered random unit vectors (384-d), so that an index of a million triples is
written in minutes instead of hours. Search cost and memory are those of real vectors of the same
shape; what is found is not meaningful. Questions name a head entity of a random triple, so the
dictionary linker seeds them (the index records linking without LLM NER).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from hoprag.embedding import PACKAGED_MINILM
from hoprag.kg.store import write_snapshot
from hoprag.kg.tables import Adjacency, KGTables
from indexing.graph import build_graph_structure
from indexing.questions import questions_table

NAMES = ["Halleck", "Quifen", "Carrow", "Ulmar", "Serrano", "Okafor", "Brisk", "Talvane"]
TRIPLES_PER_DOCUMENT = 10
NUM_RELATIONS = 64


def clustered_vectors(n: int, dim: int, seed: int, uniform: bool = False) -> np.ndarray:
    """``n`` unit float32 vectors around ``n/50`` random centres (or uniform on the sphere)."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, dim), dtype=np.float32)
    centres = rng.standard_normal((max(1, n // 50), dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    for start in range(0, n, 65536):
        stop = min(n, start + 65536)
        noise = rng.standard_normal((stop - start, dim)).astype(np.float32)
        if uniform:
            block = noise
        else:
            # noise of norm ~1 around a unit centre: cosine to the centre ~0.7
            block = centres[rng.integers(0, len(centres), stop - start)] + noise / np.sqrt(dim)
        out[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def random_document_triples(
    num_triples: int, rng: random.Random, entity_name: Callable[[random.Random, int], str]
) -> list[list[tuple[str, str, str]]]:
    """``num_triples // 10`` documents of 10 random triples each, over ``max(10, num_triples // 5)``
    entities and 64 relations (``relation 0`` ... ``relation 63``).

    ``entity_name(rng, i)`` names entity ``i``; entities are named in order, before any triple is
    drawn, so what the namer draws from ``rng`` is part of the sequence. Callers pin their seed
    and namer: ``hoprag bench index``'s recorded figures and the synthetic serving indexes depend
    on this exact sequence of draws.
    """
    n_entities = max(10, num_triples // 5)
    entities = [entity_name(rng, i) for i in range(n_entities)]
    relations = [f"relation {i}" for i in range(NUM_RELATIONS)]
    return [
        [
            (
                entities[rng.randrange(n_entities)],
                relations[rng.randrange(NUM_RELATIONS)],
                entities[rng.randrange(n_entities)],
            )
            for _ in range(TRIPLES_PER_DOCUMENT)
        ]
        for _ in range(num_triples // TRIPLES_PER_DOCUMENT)
    ]


def _person_like_name(rng: random.Random, i: int) -> str:
    return f"{rng.choice(NAMES)} {i} {rng.choice(NAMES)}"


def synthetic_tables(num_triples: int, dim: int = 384, seed: int = 0, questions: int = 40) -> KGTables:
    """KG tables of ``num_triples`` synthetic triples with random vectors (see the module docstring)."""
    rng = random.Random(seed)
    # At least one document. Asking for 10 triples instead of fewer gives exactly that: the entity
    # count is 10 for anything under 50 triples, so the draws are unchanged.
    doc_triples = random_document_triples(max(num_triples, TRIPLES_PER_DOCUMENT), rng, _person_like_name)
    g = build_graph_structure(len(doc_triples), doc_triples, [[] for _ in doc_triples])
    documents = pa.table(
        {
            "doc_id": pa.array(np.arange(len(doc_triples), dtype=np.int32)),
            "title": pa.array([f"Document {i}" for i in range(len(doc_triples))], pa.string()),
            "text": pa.array(
                [" ".join(f"{h} {r} {t}." for h, r, t in ts) for ts in doc_triples], pa.string()
            ),
            "content_hash": pa.array([f"{i:016x}" for i in range(len(doc_triples))], pa.string()),
        }
    )
    picked = [
        doc_triples[rng.randrange(len(doc_triples))][rng.randrange(TRIPLES_PER_DOCUMENT)]
        for _ in range(questions)
    ]
    rows: list[dict[str, Any]] = [
        {
            "split": "test",
            "id": str(i),
            "question": f"What is the {r} of {h}?",
            "answer": t,
            "answer_aliases": [],
            "question_entities": [],
            "link_sources": [],
            "supporting_facts": [],
            "supporting_docs": [],
            "supporting_entities": [],
            "answer_in_supporting_entities": False,
            "metadata": {},
        }
        for i, (h, r, t) in enumerate(picked)
    ]
    return KGTables(
        documents=documents,
        entity_names=g.entity_names,
        entity_surface=g.entity_surface,
        entity_num_docs=g.entity_num_docs,
        relation_names=g.relation_names,
        head=g.head,
        relation=g.relation,
        tail=g.tail,
        kind=np.zeros(len(g.head), np.int8),
        triple_doc_ids=g.triple_doc_ids,
        doc_entity_doc=g.doc_entity_doc,
        doc_entity_entity=g.doc_entity_entity,
        entity_embeddings=clustered_vectors(len(g.entity_names), dim, seed + 1),
        relation_embeddings=clustered_vectors(len(g.relation_names), dim, seed + 2),
        adjacency=Adjacency.build(len(g.entity_names), g.head, g.tail),
        questions=questions_table(rows),
        triple_embeddings=clustered_vectors(len(g.head), dim, seed + 3),
        document_embeddings=clustered_vectors(len(doc_triples), dim, seed + 4),
    )


def write_synthetic_index(out: Path, tables: KGTables, ann_min_rows: int | None) -> dict[str, Any]:
    """Write ``tables`` at ``out`` as an index linked without LLM NER, embedder MiniLM (its query
    vectors have the right dimension; see the module docstring)."""
    manifest = {
        "counts": {"entities": len(tables.entity_names), "triples": tables.num_triples},
        "embedder": PACKAGED_MINILM,
        "config": {"questions": {"use_llm_ner": False}},
        "source": {"format": "synthetic", "seed": 0},
    }
    return write_snapshot(out, tables, manifest, ann_min_rows=ann_min_rows)
