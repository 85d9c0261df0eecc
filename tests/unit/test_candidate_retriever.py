"""The distractor setting's retriever: any retriever cut to each question's own paragraphs."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from hoprag.retrieval.base import RankedDocument, RetrievalQuery, RetrievalResult
from hoprag.retrieval.candidates import candidate_retriever

TITLES = ["A", "B", "C", "D", "E", "F"]


class FixedRanking:
    """Ranks documents by fixed scores and leaves out those without one (as a GLM leaves out
    documents its subgraph never reached); records the ``k`` it was asked for."""

    name = "fixed"

    def __init__(self, scores: dict[int, float]) -> None:
        self.scores = scores
        self.asked: list[int] = []

    def retrieve(self, queries: Sequence[RetrievalQuery], k: int) -> list[RetrievalResult]:
        self.asked.append(k)
        ranked = sorted(self.scores.items(), key=lambda item: -item[1])[:k]
        return [RetrievalResult([RankedDocument(d, TITLES[d], s) for d, s in ranked]) for _ in queries]


def test_each_question_ranks_only_its_own_paragraphs_in_the_inner_order_unranked_ones_last():
    inner = FixedRanking({0: 0.9, 1: 0.8, 2: 0.7, 3: 0.6})  # E and F are never ranked
    questions = [
        {"question": "Who  directed A?", "candidate_docs": ["F", "C", "A", "E"]},
        {"question": "Pooled question?", "candidate_docs": []},
    ]
    retriever = candidate_retriever(inner, questions, TITLES)
    assert retriever.name == "fixed@candidates"
    own, pooled = retriever.retrieve(
        [RetrievalQuery("Who directed A?"), RetrievalQuery("Pooled question?")], k=3
    )
    assert inner.asked == [len(TITLES)]  # the inner retriever ranks the whole index
    # A and C as ranked, then F (unranked, first in the file's order); E falls beyond k
    assert [d.title for d in own.documents] == ["A", "C", "F"]
    assert own.documents[-1].score <= own.documents[-2].score
    assert [d.title for d in pooled.documents] == ["A", "B", "C"]


def test_an_index_without_candidates_cannot_serve_the_distractor_setting():
    with pytest.raises(ValueError, match="no question has candidate documents"):
        candidate_retriever(FixedRanking({}), [{"question": "q", "candidate_docs": ["Z"]}], TITLES)
