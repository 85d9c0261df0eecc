"""Graph assembly: dedup, provenance, document links, synonym edges, adjacency, snapshots."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hoprag.kg.index import KGIndex
from hoprag.kg.store import KGIndexError, read_manifest, verify_checksums, write_snapshot
from hoprag.kg.tables import KIND_EQUIVALENT
from indexing.config import SynonymConfig
from indexing.corpus import Document
from indexing.graph import PreviousState, build_tables, synonym_pairs
from tests.support.counting_embedder import CountingEmbedder

DOCS = [
    Document("Mira Castell", "Mira Castell was born in Dornwick. Mira Castell starred in The Ember Road."),
    Document("The Ember Road", "The Ember Road was directed by Tavin Orlo."),
    Document("Ember Road (film)", "Ember Road was directed by Tavin Orlo."),
]
TRIPLES = [
    [("Mira Castell", "born in", "Dornwick"), ("Mira Castell", "starred in", "The Ember Road")],
    [
        ("The Ember Road", "was directed by", "Tavin Orlo"),
        ("the ember road", "Was  Directed by", "Tavin Orlo"),
    ],
    [("Ember Road", "was directed by", "Tavin Orlo")],
]


def _build(embedder, docs=DOCS, triples=TRIPLES, previous=None, synonyms=None):
    return build_tables(docs, triples, [[] for _ in docs], embedder, synonyms or SynonymConfig(), previous)


def test_entities_relations_and_triples_are_normalized_and_deduplicated(embedder):
    t = _build(embedder)
    assert t.entity_names == sorted(
        ["mira castell", "dornwick", "the ember road", "tavin orlo", "ember road"]
    )
    assert "was directed by" in t.relation_names
    extracted = [
        (t.entity_names[h], t.relation_names[r], t.entity_names[o])
        for h, r, o, k in zip(t.head, t.relation, t.tail, t.kind, strict=True)
        if k == 0
    ]
    assert len(extracted) == len(set(extracted)) == 4
    # provenance: the same normalized triple from one document is stored once
    directed = extracted.index(("the ember road", "was directed by", "tavin orlo"))
    assert t.triple_doc_ids[directed] == [1]
    assert t.entity_surface[t.entity_names.index("mira castell")] == "Mira Castell"


def test_document_entity_links_and_counts(embedder):
    t = _build(embedder)
    links = {(int(d), t.entity_names[e]) for d, e in zip(t.doc_entity_doc, t.doc_entity_entity, strict=True)}
    assert (0, "dornwick") in links and (2, "ember road") in links and (1, "mira castell") not in links
    assert t.entity_num_docs[t.entity_names.index("tavin orlo")] == 2


def test_synonym_edges_link_near_duplicate_names_only(embedder):
    t = _build(embedder)
    eq = {
        tuple(sorted((t.entity_names[h], t.entity_names[o])))
        for h, o, k in zip(t.head, t.tail, t.kind, strict=True)
        if k == KIND_EQUIVALENT
    }
    assert ("ember road", "the ember road") in eq
    assert all("dornwick" not in pair for pair in eq)
    none = _build(embedder, synonyms=SynonymConfig(enabled=False))
    assert (none.kind == KIND_EQUIVALENT).sum() == 0


def test_synonym_pairs_threshold_is_cosine_over_self_similarity():
    v = np.array([[1.0, 0.0], [0.9, np.sqrt(1 - 0.81)], [0.0, 1.0]], dtype=np.float32)
    assert synonym_pairs(v, [0, 1, 2], SynonymConfig(threshold=0.8)) == {(0, 1)}
    assert synonym_pairs(v, [2], SynonymConfig(threshold=0.8)) == set()
    assert synonym_pairs(v, [0], SynonymConfig(threshold=0.95)) == set()


def test_incremental_build_embeds_only_new_entities(embedder):
    first = _build(embedder, DOCS[:2], TRIPLES[:2])
    prev = PreviousState(
        entity_vectors={n: first.entity_embeddings[i] for i, n in enumerate(first.entity_names)},
        relation_vectors={n: first.relation_embeddings[i] for i, n in enumerate(first.relation_names)},
    )
    second = _build(embedder, previous=prev)
    assert second.extra["new_entities"] == 1  # only "ember road"
    full = _build(embedder)
    np.testing.assert_allclose(second.entity_embeddings, full.entity_embeddings, atol=1e-5)
    assert second.entity_names == full.entity_names


def test_adjacency_and_k_hop(tmp_path, embedder):
    t = _build(embedder)
    write_snapshot(tmp_path, t, {"counts": {}})
    ix = KGIndex(tmp_path)
    mira = ix.entity_id("Mira Castell")
    tavin = ix.entity_id("TAVIN ORLO")
    # any spelling finds the normalized (lower-case) entity
    assert mira is not None and ix.entity_names[mira] == "mira castell"
    assert tavin is not None and ix.entity_names[tavin] == "tavin orlo"
    nbrs, tids = ix.neighbors(mira)
    assert {ix.entity_names[n] for n in nbrs} == {"dornwick", "the ember road"}
    assert all(mira in (ix.head[t], ix.tail[t]) for t in tids)
    assert ix.k_hop([mira], 1) == {mira: 0, ix.entity_id("dornwick"): 1, ix.entity_id("the ember road"): 1}
    assert ix.k_hop([mira], 2)[tavin] == 2
    assert len(ix.k_hop([mira], 3, max_entities=2)) == 2


def test_snapshots_switch_atomically_and_detect_corruption(tmp_path, embedder):
    t = _build(embedder)
    m1 = write_snapshot(tmp_path, t, {"counts": {"n": 1}})
    # A crash while building the next snapshot leaves a temp dir; the manifest still points to m1.
    (tmp_path / "snapshots" / ".building-crashed").mkdir()
    (tmp_path / "snapshots" / ".building-crashed" / "triples.parquet").write_bytes(b"half")
    assert read_manifest(tmp_path)["snapshot"] == m1["snapshot"]
    assert KGIndex(tmp_path, verify=True).num_triples == t.num_triples
    m2 = write_snapshot(tmp_path, t, {"counts": {"n": 2}})
    assert m2["snapshot"] != m1["snapshot"]
    # the crashed temp dir is gone; the replaced snapshot stays one update longer (replicas serving it)
    names = sorted(p.name for p in (tmp_path / "snapshots").iterdir())
    assert names == sorted(m["snapshot"].split("/")[1] for m in (m1, m2))
    (tmp_path / m2["snapshot"] / "triples.parquet").write_bytes(b"corrupted")
    assert verify_checksums(tmp_path, m2) == ["triples.parquet"]
    with pytest.raises(KGIndexError, match="checksum"):
        KGIndex(tmp_path, verify=True)


def test_missing_or_foreign_index_directories(tmp_path):
    with pytest.raises(KGIndexError, match="not a hoprag index"):
        KGIndex(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"format_version": 999, "snapshot": "x"}))
    with pytest.raises(KGIndexError, match="format"):
        KGIndex(tmp_path)


def test_incremental_build_reuses_triple_and_document_vectors(embedder, tmp_path):
    from hoprag.kg.tables import document_passage, triple_texts
    from indexing.config import IndexConfig
    from indexing.pipeline import _previous_state

    first = _build(embedder, DOCS[:2], TRIPLES[:2])
    write_snapshot(
        tmp_path,
        first,
        {"counts": {}, "embedder": embedder.model_id, "synonyms": SynonymConfig().model_dump(mode="json")},
    )
    prev = _previous_state(KGIndex(tmp_path), IndexConfig())
    assert prev is not None and len(prev.triple_vectors) == first.num_triples

    counting = CountingEmbedder(embedder)
    second = build_tables(DOCS, TRIPLES, [[] for _ in DOCS], counting, SynonymConfig(), prev)
    texts = triple_texts(
        second.entity_names,
        second.entity_surface,
        second.relation_names,
        second.head,
        second.relation,
        second.tail,
    )
    new_texts = set(texts) - set(prev.triple_vectors)
    assert new_texts and new_texts <= set(counting.seen)
    assert not set(prev.triple_vectors) & set(counting.seen)  # reused, not embedded again
    assert document_passage(DOCS[0].title, DOCS[0].text) not in counting.seen
    full = _build(embedder)
    np.testing.assert_allclose(second.triple_embeddings, full.triple_embeddings, atol=1e-5)
    np.testing.assert_allclose(second.document_embeddings, full.document_embeddings, atol=1e-5)
