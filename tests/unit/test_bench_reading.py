"""The reading benchmark's questions: each real sample's test questions with their gold paragraphs."""

from __future__ import annotations

import pytest

from benchmarks.llm import READING_SETS, gold_reading


@pytest.mark.parametrize("dataset", sorted(READING_SETS))
def test_each_reading_question_comes_with_its_gold_paragraphs_and_answer(dataset: str) -> None:
    items = gold_reading(READING_SETS[dataset], 8)
    assert len(items) == 8
    for question, gold, answers in items:
        assert question.strip()
        assert len(gold) >= 2, (dataset, question)  # multi-hop: at least two gold paragraphs
        assert all(": " in paragraph for paragraph in gold)  # "Title: text"
        assert answers and answers[0]
    # the test portion only: none of the train half's questions (split by id, recipes' 0.5)
    from indexing.formats.reader import read_published

    train = {
        q["question"] for q in read_published(READING_SETS[dataset], train_fraction=0.5).questions["train"]
    }
    assert not train & {q for q, _, _ in items}
