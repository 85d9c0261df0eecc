"""Document ranking from entity scores, recall@k, the dense baseline and `hoprag eval retrieval`."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from evaluation.metrics import recall_at_k
from evaluation.retrieval import evaluate_retrieval
from hoprag.kg.index import KGIndex
from hoprag.retrieval.base import RetrievalQuery
from hoprag.retrieval.dense import DenseRetriever
from hoprag.retrieval.ranking import entity_document_csr, rank_documents_idf
from hoprag.retrieval.subgraph import SubgraphRetrieverSettings
from hoprag_cli import main
from indexing.questions import questions_table


def test_idf_ranking_worked_by_hand():
    # entity 0 is in docs {0, 1, 2} (weight 1/3), entity 1 in {1} (weight 1), entity 2 in {2, 3} (1/2)
    docs = np.array([0, 1, 2, 1, 2, 3])
    ents = np.array([0, 0, 0, 1, 2, 2])
    indptr, entity_docs = entity_document_csr(docs, ents, 3)
    assert indptr.tolist() == [0, 3, 4, 6]
    ranked = rank_documents_idf([0, 1, 2], [0.9, 0.8, 0.1], indptr, entity_docs, k=4)
    assert [d for d, _ in ranked] == [1, 2, 3, 0]  # 4/3, 5/6, 1/2, 1/3
    assert ranked[0][1] == pytest.approx(1 / 3 + 1)
    assert ranked[1][1] == pytest.approx(1 / 3 + 1 / 2)
    # only the top entities vote
    only_top = rank_documents_idf([0, 1, 2], [0.9, 0.8, 0.1], indptr, entity_docs, k=4, top_entities=1)
    assert [d for d, _ in only_top] == [0, 1, 2]  # equal weights: ties broken by document id
    assert rank_documents_idf([], [], indptr, entity_docs, k=3) == []


def test_recall_at_k():
    assert recall_at_k(["a", "b", "c"], ["b", "x"], 2) == 0.5
    assert recall_at_k(["a", "b", "c"], ["c"], 2) == 0.0
    assert recall_at_k(["a", "b"], ["a", "b"], 5) == 1.0
    with pytest.raises(ValueError):
        recall_at_k(["a"], [], 2)


def test_dense_retriever_and_entity_documents(small_index, embedder):
    index = KGIndex(small_index)
    dense = DenseRetriever(index, embedder)
    (result,) = dense.retrieve([RetrievalQuery("Which drug treats Kellan fever?")], k=2)
    assert result.documents[0].title == "Ostarizumab"
    assert len(result.documents) == 2 and result.documents[0].score >= result.documents[1].score
    indptr, docs = index.entity_documents
    halvaria = index.entity_id("Halvaria")
    assert docs[indptr[halvaria] : indptr[halvaria + 1]].tolist() == [0]


def test_evaluate_retrieval_and_the_cli(small_index, embedder, capsys):
    result = evaluate_retrieval(KGIndex(small_index), DenseRetriever(KGIndex(small_index), embedder))
    assert result["n"] == 2 and result["skipped_no_gold"] == 1
    assert result["recall@2"] == 1.0 and result["recall@5"] == 1.0
    assert main(["eval", "retrieval", "--index", str(small_index), "--retriever", "dense", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["recall@2"], printed["recall@5"], printed["n"]) == (1.0, 1.0, 2)
    assert main(["eval", "retrieval", "--index", str(small_index), "--split", "dev"]) == 2
    assert "no 'dev' questions" in capsys.readouterr().err
    assert main(["eval", "retrieval", "--index", str(small_index), "--retriever", "nonsense"]) == 2
    assert "expected 'dense'" in capsys.readouterr().err


def test_questions_table_round_trips_through_arrow():
    table = questions_table([])
    assert isinstance(table, pa.Table) and table.num_rows == 0


def test_score_weighted_votes_use_the_model_when_all_entities_vote():
    docs = np.array([0, 1])
    ents = np.array([0, 1])
    indptr, entity_docs = entity_document_csr(docs, ents, 2)
    plain = rank_documents_idf([0, 1], [-3.0, 3.0], indptr, entity_docs, k=2)
    weighted = rank_documents_idf([0, 1], [-3.0, 3.0], indptr, entity_docs, k=2, weight_by_score=True)
    assert [d for d, _ in plain] == [1, 0] and plain[0][1] == plain[1][1]  # tie, broken by score sum
    # each entity is in one document (vote 1), weighted by sigmoid(3) = 0.9526 and sigmoid(-3) = 0.0474
    assert [d for d, _ in weighted] == [1, 0]
    assert weighted[0][1] == pytest.approx(1 / (1 + np.exp(-3.0)))
    assert weighted[1][1] == pytest.approx(1 / (1 + np.exp(3.0)))


def test_the_score_ranker_sums_probabilities_without_document_frequency():
    # entity 0 is in documents 0 and 1 (a hub), entity 1 only in document 1, entity 2 only in 2
    indptr, entity_docs = entity_document_csr(np.array([0, 1, 1, 2]), np.array([0, 0, 1, 2]), 3)
    logits = [2.0, 0.0, 1.0]
    p = 1 / (1 + np.exp(-np.array(logits)))
    by_score = rank_documents_idf(
        [0, 1, 2], logits, indptr, entity_docs, k=3, weight_by_score=True, inverse_document_frequency=False
    )
    # document 1 holds two likely entities (p0 + p1) and leads; then the hub's p0 = 0.88 > p2 = 0.73
    assert [d for d, _ in by_score] == [1, 0, 2]
    assert by_score[0][1] == pytest.approx(p[0] + p[1])
    with_idf = rank_documents_idf([0, 1, 2], logits, indptr, entity_docs, k=3, weight_by_score=True)
    # with 1/df the hub's probability is halved: document 2 (p2 = 0.73) beats document 0 (p0 / 2 = 0.44)
    assert [d for d, _ in with_idf] == [1, 2, 0]
    assert with_idf[0][1] == pytest.approx(p[0] / 2 + p[1])


def test_the_ranker_setting_picks_the_votes():
    indptr, entity_docs = entity_document_csr(np.array([0, 1, 1, 2]), np.array([0, 0, 1, 2]), 3)
    ranked = {
        ranker: SubgraphRetrieverSettings(doc_ranker=ranker).rank_documents(
            [0, 1, 2], [2.0, 0.0, 1.0], (indptr, entity_docs), k=3
        )
        for ranker in ("idf", "score_idf", "score")
    }
    assert [d for d, _ in ranked["score"]] == [1, 0, 2]
    assert [d for d, _ in ranked["score_idf"]] == [1, 2, 0]
    assert ranked["idf"][0] == (1, pytest.approx(1.5))  # 1/2 (hub) + 1


def test_grouped_recall_by_question_metadata(small_index, embedder):
    result = evaluate_retrieval(
        KGIndex(small_index), DenseRetriever(KGIndex(small_index), embedder), group_by="domain"
    )
    assert result["groups"] == {
        "None": {"recall@2": 1.0, "recall@5": 1.0, "n": 1},
        "x": {"recall@2": 1.0, "recall@5": 1.0, "n": 1},
    }


def test_evaluate_retrieval_reports_failures(small_index, embedder):
    class Broken(DenseRetriever):
        def retrieve(self, queries, k):
            raise RuntimeError("model on fire")

    index = KGIndex(small_index)
    with pytest.raises(ValueError, match=r"every question failed .* model on fire"):
        evaluate_retrieval(index, Broken(index, embedder))
