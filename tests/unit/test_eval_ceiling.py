"""`hoprag eval ceiling` on the film KG, every figure worked out by hand.

The film KG (tests/support/film_kg.py), documents 0-6 and the entities their triples link:

    0 Payment On Demand      payment on demand, curtis bernhardt, 1951
    1 My Cousin From Warsaw  my cousin from warsaw, carl boese
    2 Curtis Bernhardt       curtis bernhardt, worms, pearl argyle
    3 Carl Boese             carl boese, berlin
    4 Worms                  worms, germany, berlin
    5 Berlin                 berlin, germany
    6 Ostarizumab            ostarizumab, kellan fever

so an entity's IDF vote is 1 / (its documents): curtis bernhardt, carl boese, worms and germany
1/2, berlin 1/3, the others 1. Every subgraph has fewer than 20 entities, so all of them vote; the
oracle gives supporting entities logit +10 and the rest -10, so with the score-weighted ranker
(``score_idf``) only supporting entities count (a non-supporting one adds 0.00005 × its vote).

The six test questions (seed → supporting entities; gold documents):

    q0 my cousin from warsaw → mcfw, carl boese (2); [1]
    q1 payment on demand     → pod, curtis bernhardt, 1951, worms, pearl argyle (5); [0, 2]
    q2 my cousin from warsaw → mcfw, carl boese, berlin, germany (4); [1, 3, 5]
    q3 kellan fever          → ostarizumab, kellan fever (2); [6]
    q4 curtis bernhardt      → curtis bernhardt, worms, pearl argyle (3); [2]
    q5 worms                 → worms, germany, berlin (3); [4]

plus ``q-unseeded`` (linked only to "Atlantis", not in the KG), one train and one dev question.
"""

from __future__ import annotations

import json

import pytest

from evaluation.ceiling import measure_ceiling
from hoprag.glm.sampler import SamplerConfig
from hoprag.glm.settings import GLMSettings
from hoprag.kg.index import KGIndex
from hoprag_cli import main
from tests.support.film_kg import film_questions, write_film_index, write_tiny_glm


def _row(
    split: str, qid: str, question: str, entities: list[str], docs: list[str], support: list[str]
) -> dict:
    return {
        **film_questions()[0],
        "split": split,
        "id": qid,
        "question": question,
        "question_entities": entities,
        "supporting_facts": docs,
        "supporting_docs": docs,
        "supporting_entities": support,
        "metadata": {"domain": "film", "hops": 1},
    }


EXTRA = [
    _row("test", "q-unseeded", "Where is Atlantis?", ["atlantis"], ["Worms"], ["worms"]),
    _row(
        "train",
        "t0",
        "Who married Pearl Argyle?",
        ["pearl argyle"],
        ["Curtis Bernhardt"],
        ["curtis bernhardt", "worms", "pearl argyle", "atlantis"],
    ),
    _row(
        "dev",
        "d0",
        "Which city twinned with Berlin is the birthplace of Curtis Bernhardt?",
        ["curtis bernhardt"],
        ["Worms"],
        ["worms"],
    ),
]


@pytest.fixture(scope="module")
def film_index(tmp_path_factory, embedder):
    return write_film_index(
        tmp_path_factory.mktemp("ceiling") / "index", embedder, True, extra_questions=EXTRA
    )


def _settings(max_hops: int, doc_ranker: str = "score_idf") -> GLMSettings:
    return GLMSettings(sampler=SamplerConfig(max_hops=max_hops), doc_ranker=doc_ranker)  # type: ignore[arg-type]


def test_one_hop_subgraphs_by_hand(film_index) -> None:
    result = measure_ceiling(KGIndex(film_index), _settings(1))
    # Within one hop: q1 misses worms and pearl argyle (2 hops), q2 misses berlin and germany.
    # Inside: 2 + 3 + 2 + 2 + 3 + 3 = 15 of 2 + 5 + 4 + 2 + 3 + 3 = 19 supporting entities.
    assert result["questions"] == 7 and result["unseeded"] == 1
    assert result["supporting_entities"] == 19 and result["in_subgraph"] == round(15 / 19, 4)
    assert result["in_subgraph_per_question"] == round((1 + 3 / 5 + 2 / 4 + 1 + 1 + 1) / 6, 4)
    # Triples sampled: q0 1, q1 2, q2 1, q3 1, q4 3, q5 3.
    assert result["mean_triples"] == round(11 / 6, 1)
    # Oracle ranking: q2's subgraph {mcfw, carl boese} ranks documents 1 (1 + 1/2) and 3 (1/2):
    # 2 of its 3 gold documents at any k. q1: doc 0 (1 + 1/2 + 1), doc 2 (1/2): both gold in the
    # top 2. q4: doc 2 (1/2 + 1/2 + 1) first. q5: doc 4 (1/2 + 1/2 + 1/3) first. q0, q3: their
    # one document first.
    assert result["n"] == 6
    assert result["oracle_recall@2"] == result["oracle_recall@5"] == round(17 / 18, 4)


def test_two_hop_subgraphs_and_the_ranker_setting(film_index) -> None:
    index = KGIndex(film_index)
    weighted = measure_ceiling(index, _settings(2))
    # Two hops reach worms and pearl argyle for q1 and berlin for q2 (germany is 3 hops away).
    assert weighted["in_subgraph"] == round(18 / 19, 4)
    assert weighted["mean_triples"] == round((2 + 4 + 2 + 1 + 6 + 7) / 6, 1)
    # q2: documents 1 (1 + 1/2), 3 (1/2 + 1/3), then 4 and 5 (1/3 each, tie → lower id): the third
    # gold document (5) is 4th, inside the top 5 but not the top 2.
    assert weighted["oracle_recall@2"] == round(17 / 18, 4) and weighted["oracle_recall@5"] == 1.0
    # The unweighted IDF ranker lets the oracle's zeros vote as much as its ones: q5's subgraph
    # (worms, curtis bernhardt, germany, berlin, payment on demand, pearl argyle, carl boese)
    # ranks doc 2 (1/2 + 1/2 + 1) and doc 0 (1/2 + 1) above its gold doc 4 (1/2 + 1/2 + 1/3).
    plain = measure_ceiling(index, _settings(2, "idf"))
    assert plain["in_subgraph"] == weighted["in_subgraph"]
    assert plain["oracle_recall@2"] == round(14 / 18, 4) and plain["oracle_recall@5"] == 1.0


def test_splits_are_measured_apart(film_index) -> None:
    train = measure_ceiling(KGIndex(film_index), _settings(1), split="train")
    # Seed pearl argyle: one hop reaches curtis bernhardt only; "atlantis" is not in the KG.
    assert train["questions"] == 1 and train["supporting_entities"] == 3
    assert train["supporting_not_in_kg"] == 1 and train["in_subgraph"] == round(2 / 3, 4)
    assert train["oracle_recall@2"] == 1.0  # doc 2 (1/2 + 1) above doc 0 (1/2)


def test_the_oracle_gives_probabilities_one_and_zero(film_index) -> None:
    # d0: one hop from curtis bernhardt reaches payment on demand, worms and pearl argyle; only
    # worms supports. Its votes: doc 2 and doc 4 get 1/2 each; the three others add 0.00005 × their
    # votes (doc 2: 1/2 + 1, doc 0: 1/2 + 1), so doc 2 is first, the gold doc 4 second, doc 0 third.
    # (With logits ±1, probabilities 0.73 / 0.27, doc 0 would come second: 0.40 against 0.37.)
    dev = measure_ceiling(KGIndex(film_index), _settings(1), split="dev")
    assert dev["oracle_recall@2"] == 1.0
    # The unweighted ranker counts every vote in full: doc 2 (2), doc 0 (3/2), doc 4 (1/2).
    plain = measure_ceiling(KGIndex(film_index), _settings(1, "idf"), split="dev")
    assert plain["oracle_recall@2"] == 0.0 and plain["oracle_recall@5"] == 1.0


def test_the_cli_reads_the_settings_from_a_config_or_a_retriever(film_index, tmp_path, capsys) -> None:
    argv = ["eval", "ceiling", "--index", str(film_index), "--json"]
    assert main([*argv, "--set", "glm.doc_ranker=score_idf", "--hops", "1", "2"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert [(r["split"], r["sampler"]["max_hops"]) for r in results] == [
        ("dev", 1),
        ("dev", 2),
        ("test", 1),
        ("test", 2),
        ("train", 1),
        ("train", 2),
    ]
    assert [r["in_subgraph"] for r in results[2:4]] == [round(15 / 19, 4), round(18 / 19, 4)]
    # An exported retriever's settings: GLMSettings' defaults (2 hops, 600 triples, plain IDF).
    glm = write_tiny_glm(tmp_path / "glm" / "retriever").parent
    assert main([*argv, "--retriever", str(glm), "--split", "test"]) == 0
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert result["sampler"] == {"max_hops": 2, "max_triplets": 600, "seed": 0}
    assert result["doc_ranker"] == "idf" and result["oracle_recall@2"] == round(14 / 18, 4)
    assert main([*argv, "--split", "validation"]) == 2
    assert "no 'validation' questions" in capsys.readouterr().err
    assert main([*argv, "--retriever", str(glm), "--config", "x.yaml"]) == 2
