"""Vector search: exact vs ANN, the size threshold, the snapshot's vector files, old snapshots."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from hoprag.kg.index import KGIndex
from hoprag.kg.store import KGIndexError, write_snapshot
from hoprag.vectorsearch import AnnSearch, ExactSearch, VectorSearchConfig, build_ann_index
from indexing.config import SynonymConfig
from indexing.corpus import Document
from indexing.graph import build_tables
from indexing.synthetic_kg import clustered_vectors

TRIPLES = [
    [("Mira Castell", "born in", "Dornwick"), ("Mira Castell", "starred in", "The Ember Road")],
    [("The Ember Road", "directed by", "Tavin Orlo")],
    [("Dornwick", "city in", "Halvaria")],
]


def _tables(embedder):
    docs = [Document(f"doc{i}", " ".join(" ".join(t) for t in ts)) for i, ts in enumerate(TRIPLES)]
    return build_tables(docs, TRIPLES, [[], [], []], embedder, SynonymConfig(enabled=False))


def test_exact_search_ties_by_lower_id_and_subset():
    v = np.array([[1, 0], [0, 1], [1, 0], [0.6, 0.8]], dtype=np.float32)
    ids, scores = ExactSearch(v).search(np.array([1, 0], np.float32), 3)
    assert ids[0].tolist() == [0, 2, 3]
    assert scores[0].tolist() == pytest.approx([1, 1, 0.6])
    ids, _ = ExactSearch(v).search(np.array([[0, 1]], np.float32), 2, subset=np.array([0, 2, 3]))
    assert ids[0].tolist() == [3, 0]
    # blocked path (rows > block) gives the same answer as one block
    big = clustered_vectors(3000, 16, seed=3)
    q = big[:5]
    a = ExactSearch(big).search(q, 7)
    b = ExactSearch(big, block=256).search(q, 7)
    assert np.array_equal(a[0], b[0]) and np.allclose(a[1], b[1])


def test_ann_agrees_with_exact_on_clustered_vectors(tmp_path: Path):
    data = clustered_vectors(4000, 32, seed=1)
    path = tmp_path / "v.faiss"
    build_ann_index(data, path)
    ann, exact = AnnSearch(path, data, nprobe=8), ExactSearch(data)
    rng = np.random.default_rng(0)
    q = (
        data[rng.choice(len(data), 100, replace=False)]
        + rng.standard_normal((100, 32)).astype(np.float32) * 0.05
    )
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    a_ids, a_scores = ann.search(q, 5)
    e_ids, _ = exact.search(q, 5)
    assert (a_ids[:, 0] == e_ids[:, 0]).mean() >= 0.98
    # scores are exact cosines of the returned rows, best first
    assert np.allclose(a_scores, np.einsum("nd,nkd->nk", q, data[a_ids]), atol=1e-5)
    assert np.all(np.diff(a_scores, axis=1) <= 1e-6)
    # a subset search is exact over the subset
    subset = np.arange(0, 4000, 7)
    assert np.array_equal(ann.search(q, 3, subset)[0], exact.search(q, 3, subset)[0])


def test_threshold_decides_which_matrices_get_an_ann_index(tmp_path: Path, embedder):
    tables = _tables(embedder)
    write_snapshot(tmp_path / "small", tables, {"counts": {}}, ann_min_rows=1000)
    small = KGIndex(tmp_path / "small")
    assert not list(small.snapshot.glob("*.faiss"))
    assert small.vector_search("entity").kind == "exact"  # type: ignore[union-attr]
    # triples: 4 rows, entities: 5, documents: 3 → a threshold of 4 indexes the first two only
    manifest = write_snapshot(tmp_path / "big", tables, {"counts": {}}, ann_min_rows=4)
    assert {
        "entity_ann.faiss",
        "triple_ann.faiss",
        "triple_embeddings.npy",
        "document_embeddings.npy",
    } <= set(manifest["checksums"])
    assert "document_ann.faiss" not in manifest["checksums"]
    big = KGIndex(tmp_path / "big", verify="full")
    assert big.vector_search("entity").kind == "ann"  # type: ignore[union-attr]
    assert big.vector_search("triple").kind == "ann"  # type: ignore[union-attr]
    assert big.vector_search("document").kind == "exact"  # type: ignore[union-attr]
    forced = KGIndex(tmp_path / "big", vectors=VectorSearchConfig(mode="exact"))
    assert forced.vector_search("triple").kind == "exact"  # type: ignore[union-attr]
    # the ANN path and the exact path find the same nearest entity
    q = np.asarray(big.entity_embeddings[2:3])
    assert big.vector_search("entity").search(q, 1)[0][0, 0] == 2  # type: ignore[union-attr]
    assert np.array_equal(big.triple_embeddings, np.asarray(tables.triple_embeddings))


def test_damaged_ann_file_is_a_clear_error(tmp_path: Path, embedder):
    write_snapshot(tmp_path, _tables(embedder), {"counts": {}}, ann_min_rows=0)
    index = KGIndex(tmp_path)
    ann = index.snapshot / "triple_ann.faiss"
    ann.write_bytes(b"not a faiss index" + ann.read_bytes()[17:])
    with pytest.raises(KGIndexError, match=r"triple_ann\.faiss"):
        KGIndex(tmp_path)  # the checksum check names it
    unchecked = KGIndex(tmp_path, verify="none")
    with pytest.raises(KGIndexError, match=r"triple_ann\.faiss"):
        unchecked.vector_search("triple")  # and so does opening it without the check


def test_snapshot_without_triple_vectors_still_loads(tmp_path: Path, embedder, monkeypatch, caplog):
    from hoprag.planner.knowledge import KnowledgeGraphView

    monkeypatch.setenv("HOPRAG_CACHE_DIR", str(tmp_path / "cache"))
    tables = _tables(embedder)
    expected = np.asarray(tables.triple_embeddings)
    tables.triple_embeddings = None  # the layout of an index built before issue 17
    tables.document_embeddings = None
    write_snapshot(tmp_path / "old", tables, {"counts": {}})
    index = KGIndex(tmp_path / "old")
    assert index.triple_embeddings is None and index.vector_search("triple") is None
    kg = KnowledgeGraphView(index, embedder)
    with caplog.at_level(logging.INFO, logger="hoprag.planner.knowledge"):
        vectors = kg.triple_vectors
    assert "no triple_embeddings.npy" in caplog.text
    assert np.allclose(vectors, expected, atol=1e-5)  # what the index build would have stored
    assert kg.triple_search.kind == "exact"
    hits = kg.search_triples(expected[1], kg.triple_text(1), k=1)
    assert hits[0][0] == 1
