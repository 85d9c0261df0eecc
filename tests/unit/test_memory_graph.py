"""The memory graph's thesis and episodic vertices: construction, dedup by meaning, storage, and
incremental add/delete (the snapshot is rebuilt from the remaining documents, vectors reused)."""

from __future__ import annotations

import numpy as np

from hoprag.kg.index import KGIndex
from hoprag.kg.stats import index_stats
from hoprag.kg.store import write_snapshot
from indexing.config import IndexConfig, MemoryGraphConfig, SynonymConfig
from indexing.corpus import Document
from indexing.graph import build_tables
from indexing.pipeline import _previous_state
from indexing.theses import merge_by_meaning, split_statements
from tests.support.counting_embedder import CountingEmbedder

DOCS = [
    Document(
        "Curtis Bernhardt",
        "Curtis Bernhardt was a German film director. He was born in Worms in 1899. Short one.",
    ),
    Document("Payment On Demand", "Payment On Demand is a 1951 film directed by Curtis Bernhardt."),
    Document("Carl Boese", "Carl Boese directed My Cousin From Warsaw. Carl Boese was born in Berlin."),
]
TRIPLES = [
    [("Curtis Bernhardt", "born in", "Worms"), ("Curtis Bernhardt", "nationality", "German")],
    [("Payment On Demand", "directed by", "Curtis Bernhardt")],
    [("My Cousin From Warsaw", "directed by", "Carl Boese"), ("Carl Boese", "born in", "Berlin")],
]


def _build(embedder, docs=DOCS, triples=TRIPLES, previous=None, memory=None):
    return build_tables(
        docs, triples, [[] for _ in docs], embedder, SynonymConfig(enabled=False), previous, memory=memory
    )


def _theses(tables) -> dict[str, tuple[list[str], list[str]]]:
    """thesis text -> (its episodes' titles, its objects' names)."""
    titles = tables.documents.column("title").to_pylist()
    th = tables.theses
    return {
        text: ([titles[d] for d in docs], [tables.entity_names[e] for e in ents])
        for text, docs, ents in zip(th.texts, th.doc_ids, th.entity_ids, strict=True)
    }


def test_split_statements_keeps_abbreviations_and_drops_fragments():
    text = "The U.S. film starred J. R. Smith. It won. He was born in St. Louis, Mo. in 1950."
    assert split_statements(text, min_chars=10) == [
        "The U.S. film starred J. R. Smith.",
        "He was born in St. Louis, Mo. in 1950.",
    ]
    assert split_statements("word " * 200, max_chars=50)[0] == ("word " * 10).strip()
    assert split_statements("") == []


def test_each_sentence_is_a_thesis_linked_to_its_episode_and_the_objects_it_names(embedder):
    theses = _theses(_build(embedder))
    # A sentence that does not name its title reads on its own and belongs to the title entity.
    assert theses["Curtis Bernhardt: He was born in Worms in 1899."] == (
        ["Curtis Bernhardt"],
        ["curtis bernhardt", "worms"],
    )
    assert theses["Curtis Bernhardt was a German film director."] == (
        ["Curtis Bernhardt"],
        ["curtis bernhardt", "german"],
    )
    # A hyper-edge over every entity the statement mentions, not only a triple's two.
    assert theses["Payment On Demand is a 1951 film directed by Curtis Bernhardt."][1] == [
        "curtis bernhardt",
        "payment on demand",
    ]
    assert not any("Short one" in t for t in theses)  # below min_chars
    assert len(theses) == 5


def test_statements_with_the_same_meaning_are_one_thesis_stated_by_both_episodes(embedder):
    docs = [
        *DOCS,
        Document("Berlin people", "Carl Boese was born in Berlin ."),  # same statement, other passage
        Document("Worms", "Worms is a city in Germany."),
    ]
    triples = [*TRIPLES, [("Carl Boese", "born in", "Berlin")], [("Worms", "city in", "Germany")]]
    tables = _build(embedder, docs, triples)
    theses = _theses(tables)
    assert theses["Carl Boese was born in Berlin."][0] == ["Carl Boese", "Berlin people"]
    assert tables.theses.merged == 1
    assert "Worms is a city in Germany." in theses  # a different statement is kept apart
    exact_only = _build(embedder, docs, triples, memory=MemoryGraphConfig(dedup_threshold=1.0))
    assert len(exact_only.theses) == len(tables.theses) + 1  # the extra space is not the same string


def test_merge_by_meaning_joins_chains_into_the_lowest_id():
    v = np.array([[1.0, 0.0], [0.999, 0.045], [0.0, 1.0], [0.998, 0.063]], dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    assert merge_by_meaning(v, 0.99).tolist() == [0, 0, 2, 0]
    assert merge_by_meaning(v, 1.0 + 1e-6).tolist() == [0, 1, 2, 3]
    # close vectors naming different entities are different statements
    assert merge_by_meaning(v, 0.99, [[1], [1], [2], [3]]).tolist() == [0, 0, 2, 3]


def test_templated_statements_about_different_things_stay_apart(embedder):
    docs = [
        Document("Dropomin", "The protein Dropomin was first characterized in 1990."),
        Document("Zylocin", "The protein Zylocin was first characterized in 1990."),
    ]
    triples = [[("Dropomin", "characterized in", "1990")], [("Zylocin", "characterized in", "1990")]]
    assert len(_build(embedder, docs, triples).theses) == 2


def test_theses_are_stored_read_back_and_counted(embedder, tmp_path):
    tables = _build(embedder)
    write_snapshot(tmp_path, tables, {"counts": {}, "summary": {"theses_merged": 0}})
    index = KGIndex(tmp_path)
    theses = index.theses
    assert theses is not None and theses.texts == tables.theses.texts
    assert index.thesis_embeddings.shape == (len(theses), embedder.dim)
    bernhardt = index.entity_id("Curtis Bernhardt")
    ids, shared = theses.around([bernhardt, index.entity_id("Worms")])
    born = theses.texts.index("Curtis Bernhardt: He was born in Worms in 1899.")
    assert born in ids.tolist() and shared[ids.tolist().index(born)] == 2
    assert len(ids) == 3  # every thesis naming Curtis Bernhardt
    assert index.vector_search("thesis").size == len(theses)
    stats = index_stats(index)
    assert stats["theses"] == 5 and stats["episodes_with_theses"] == 3
    assert stats["thesis_object_links"] == sum(len(e) for e in tables.theses.entity_ids)


def test_without_theses_the_snapshot_has_none(embedder, tmp_path):
    tables = _build(embedder, memory=MemoryGraphConfig(theses=False))
    assert tables.theses is None
    write_snapshot(tmp_path, tables, {"counts": {}})
    index = KGIndex(tmp_path)
    assert index.theses is None and index.vector_search("thesis") is None
    assert index_stats(index)["theses"] == 0


def test_adding_and_deleting_a_document_adds_and_removes_its_theses(embedder, tmp_path):
    manifest = {
        "counts": {},
        "embedder": embedder.model_id,
        "synonyms": SynonymConfig(enabled=False).model_dump(mode="json"),
    }
    config = IndexConfig(synonyms=SynonymConfig(enabled=False))
    write_snapshot(tmp_path, _build(embedder, DOCS[:2], TRIPLES[:2]), manifest)
    previous = _previous_state(KGIndex(tmp_path), config)
    assert previous is not None and len(previous.thesis_vectors) == 3

    counting = CountingEmbedder(embedder)
    added = _build(counting, DOCS, TRIPLES, previous)  # --add "Carl Boese"
    assert set(_theses(added)) - set(previous.thesis_vectors) == {
        "Carl Boese directed My Cousin From Warsaw.",
        "Carl Boese was born in Berlin.",
    }
    assert not set(previous.thesis_vectors) & set(counting.seen)  # earlier theses not embedded again
    np.testing.assert_allclose(added.theses.embeddings, _build(embedder).theses.embeddings, atol=1e-5)

    write_snapshot(tmp_path, added, manifest)
    remaining = [DOCS[0], DOCS[2]]  # --delete "Payment On Demand"
    deleted = _build(
        embedder, remaining, [TRIPLES[0], TRIPLES[2]], _previous_state(KGIndex(tmp_path), config)
    )
    theses = _theses(deleted)
    assert "Payment On Demand is a 1951 film directed by Curtis Bernhardt." not in theses
    assert all(titles and set(titles) <= {"Curtis Bernhardt", "Carl Boese"} for titles, _ in theses.values())
    assert len(theses) == 4


def test_the_memory_benchmark_reports_counts_seconds_and_bytes(tmp_path, capsys):
    import argparse
    import json

    from benchmarks.memory import run_memory_benchmark

    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps({d.title: d.text for d in DOCS}))
    args = argparse.Namespace(
        index=None, corpus=corpus, dedup_threshold=None, workdir=tmp_path / "work", json=True
    )
    assert run_memory_benchmark(args) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    # entities are the titles here: every statement belongs to its passage's subject
    assert report["documents"] == 3 and report["statements"] == report["theses"] == 5
    assert (
        report["bytes"]["theses_total"] > 0 and report["bytes"]["thesis_embeddings.npy"] == 128 + 5 * 384 * 4
    )
    assert report["seconds"]["build_total"] > 0
