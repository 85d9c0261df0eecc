"""Small real KG indexes (built with the packaged MiniLM) shared by unit tests."""

from __future__ import annotations

import pytest

from hoprag.kg.index import KGIndex
from hoprag.kg.store import write_snapshot
from indexing.config import SynonymConfig
from indexing.corpus import Document
from indexing.graph import build_tables
from indexing.questions import questions_table

TRIPLES = [
    [("Mira Castell", "born in", "Dornwick"), ("Mira Castell", "starred in", "The Ember Road")],
    [("The Ember Road", "directed by", "Tavin Orlo")],
    [("Dornwick", "city in", "Halvaria")],
]


@pytest.fixture(scope="module")
def glm_index(tmp_path_factory, embedder):
    """Three documents: Mira Castell, The Ember Road and Dornwick, 4 triples, no questions."""
    docs = [Document(f"doc{i}", " ".join(" ".join(t) for t in ts)) for i, ts in enumerate(TRIPLES)]
    tables = build_tables(docs, TRIPLES, [[], [], []], embedder, SynonymConfig(enabled=False))
    out = tmp_path_factory.mktemp("glm") / "index"
    write_snapshot(out, tables, {"counts": {}})
    return KGIndex(out)


@pytest.fixture(scope="module")
def small_index(tmp_path_factory, embedder):
    docs = [
        Document("Dornwick", "Dornwick is a harbour city in Halvaria known for shipbuilding."),
        Document("The Ember Road", "The Ember Road is a 1994 film directed by Tavin Orlo."),
        Document("Ostarizumab", "Ostarizumab is a drug that treats Kellan fever."),
    ]
    triples = [
        [("Dornwick", "city in", "Halvaria")],
        [("The Ember Road", "directed by", "Tavin Orlo")],
        [("Ostarizumab", "treats", "Kellan fever")],
    ]
    tables = build_tables(docs, triples, [[], [], []], embedder, SynonymConfig())
    rows = [
        {
            "split": "test",
            "id": "1",
            "question": "Which drug treats Kellan fever?",
            "answer": "Ostarizumab",
            "answer_aliases": [],
            "question_entities": ["kellan fever"],
            "link_sources": ["dictionary"],
            "supporting_facts": ["Ostarizumab"],
            "supporting_docs": ["Ostarizumab"],
            "supporting_entities": [],
            "answer_in_supporting_entities": True,
            "metadata": {"domain": "x"},
        },
        {
            "split": "test",
            "id": "2",
            "question": "Who directed The Ember Road?",
            "answer": "Tavin Orlo",
            "answer_aliases": [],
            "question_entities": [],
            "link_sources": [],
            "supporting_facts": ["The Ember Road"],
            "supporting_docs": ["The Ember Road"],
            "supporting_entities": [],
            "answer_in_supporting_entities": True,
        },
        {
            "split": "test",
            "id": "3",
            "question": "Unanswerable?",
            "answer": "",
            "answer_aliases": [],
            "question_entities": [],
            "link_sources": [],
            "supporting_facts": [],
            "supporting_docs": [],
            "supporting_entities": [],
            "answer_in_supporting_entities": False,
        },
    ]
    tables.questions = questions_table(rows)
    out = tmp_path_factory.mktemp("retrieval") / "index"
    # Linked without LLM NER: query-time linking takes these stored links as its cache. Question 2's
    # empty links are hand-made (real linking always finds a seed) to exercise the no-seed fallback.
    linking = {"questions": {"use_llm_ner": False}}
    write_snapshot(out, tables, {"counts": {}, "embedder": "packaged:all-MiniLM-L6-v2", "config": linking})
    return out


@pytest.fixture(scope="module")
def film_kg(tmp_path_factory, embedder):
    """The PAI-2 paper's plan-enhancement case as a KG, wrapped in the planner's view."""
    from hoprag.planner.knowledge import KnowledgeGraphView
    from tests.support.film_kg import write_film_index

    out = write_film_index(tmp_path_factory.mktemp("films") / "index", embedder)
    return KnowledgeGraphView(KGIndex(out), embedder)
