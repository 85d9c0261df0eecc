"""The random triples of ``hoprag bench index``'s graph build and of the synthetic serving KGs.

Both draw from :func:`indexing.synthetic_kg.random_document_triples`. The expected values were
computed with the generators as they were before they were merged into it (commit f68845e), so
that the figures recorded in docs/benchmarks.md stay comparable with new runs.
"""

from __future__ import annotations

import hashlib
import json
import random

from benchmarks.index import graph_bench_entity_name
from indexing.synthetic_kg import random_document_triples, synthetic_tables


def _sha256(value: object) -> str:
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()


def test_the_graph_bench_draws_the_same_triples_as_before() -> None:
    docs = random_document_triples(1000, random.Random(0), graph_bench_entity_name)
    assert len(docs) == 100 and all(len(d) == 10 for d in docs)
    assert docs[0][:3] == [
        ("Entity 12 Quifen", "relation 53", "Entity 48 Halleck"),
        ("Entity 140 Quifen", "relation 10", "Entity 185 Ulmar"),
        ("Entity 33 Halleck", "relation 1", "Entity 102 Halleck"),
    ]
    assert docs[-1][-1] == ("Entity 181 Ulmar", "relation 11", "Entity 119 Halleck")
    # json.dumps writes tuples as lists, as it did when this digest was taken.
    assert _sha256(docs) == "a0f1056e4c5eae423ca7b419bbfc8848ff52d4cc508450724b123b2cd861bfa3"


def test_the_graph_bench_gets_no_document_below_ten_triples() -> None:
    assert random_document_triples(7, random.Random(0), graph_bench_entity_name) == []


def _text_digest(num_triples: int, seed: int) -> tuple[int, str, list[str], list[str]]:
    t = synthetic_tables(num_triples, dim=8, seed=seed, questions=3)
    assert t.questions is not None
    text = "\n".join(t.documents.column("text").to_pylist())
    return (
        t.documents.num_rows,
        hashlib.sha256(text.encode()).hexdigest(),
        t.questions.column("question").to_pylist(),
        t.questions.column("answer").to_pylist(),
    )


def test_the_synthetic_serving_kg_is_the_same_as_before() -> None:
    assert _text_digest(1000, seed=0) == (
        100,
        "0b6c397bd027a91dce0f0aaee1cd5eff53f7e1e797535310ef90d8ce8cf06041",
        [
            "What is the relation 2 of Halleck 32 Serrano?",
            "What is the relation 2 of Serrano 63 Okafor?",
            "What is the relation 55 of Serrano 180 Talvane?",
        ],
        ["Brisk 86 Quifen", "Okafor 43 Ulmar", "Serrano 63 Okafor"],
    )


def test_a_synthetic_serving_kg_below_ten_triples_has_one_document_as_before() -> None:
    assert _text_digest(7, seed=3) == (
        1,
        "444459ea31797685b209e4dd51a0f6c5e51c0a79df043ea1059dccaec5f0414c",
        [
            "What is the relation 43 of Talvane 3 Serrano?",
            "What is the relation 63 of Quifen 2 Halleck?",
            "What is the relation 56 of Brisk 6 Carrow?",
        ],
        ["Ulmar 0 Carrow", "Talvane 3 Serrano", "Quifen 2 Halleck"],
    )
