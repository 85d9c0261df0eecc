"""Question → KG entity linking from LLM mentions, dictionary matches and the embedding fallback."""

from __future__ import annotations

from hoprag.text import dictionary_mentions
from indexing.config import QuestionLinkingConfig
from indexing.questions import link_questions

ENTITIES = ["carrow college", "film", "juno halleck", "oriel fane", "quifen", "the salt ledger"]


def test_dictionary_matches_longest_entity_like_spans_only():
    lookup = {n: i for i, n in enumerate(ENTITIES)}
    q = "Which film by Oriel Fane was shot in Quifen, near Carrow College?"
    assert dictionary_mentions(q, lookup) == ["oriel fane", "carrow college", "quifen"]  # not "film"
    assert dictionary_mentions("Who wrote The Salt Ledger?", lookup) == ["the salt ledger"]


def test_link_sources_and_supporting_entities(embedder):
    vectors = embedder.encode(ENTITIES)
    questions = [
        {
            "id": "1",
            "question": "Where did the author of The Salt Ledger study?",
            "answer": "Carrow College",
            "supporting_facts": ["The Salt Ledger", "Juno Halleck", "Unknown Doc"],
            # a published file's own paragraphs of the question, as far as the index holds them
            "candidate_documents": ["Juno Halleck", "Unknown Doc", "The Salt Ledger"],
        },
        {
            "id": "2",
            "question": "Where was Juno Halleck's teacher born?",
            "answer": "Quifen",
            "supporting_facts": [],
        },
        {"id": "3", "question": "which college is in the town?", "answer": "x", "supporting_facts": []},
    ]
    mentions = [["The Salt Ledger", "Paris"], ["Juno Halek"], []]
    title_to_doc = {"The Salt Ledger": 0, "Juno Halleck": 1}
    doc_to_entities = {0: [5, 3], 1: [2, 0]}
    rows, stats = link_questions(
        questions,
        mentions,
        ENTITIES,
        vectors,
        title_to_doc,
        doc_to_entities,
        embedder,
        QuestionLinkingConfig(),
    )
    assert rows[0]["question_entities"] == ["the salt ledger"]
    assert rows[0]["link_sources"] == ["llm_exact"]
    assert rows[0]["supporting_docs"] == ["The Salt Ledger", "Juno Halleck"]
    assert rows[0]["candidate_docs"] == ["Juno Halleck", "The Salt Ledger"]
    assert rows[1]["candidate_docs"] == []  # pooled: every document is a candidate
    assert rows[0]["supporting_entities"] == [
        "carrow college",
        "juno halleck",
        "oriel fane",
        "the salt ledger",
    ]
    assert rows[0]["answer_in_supporting_entities"] is True
    # a misspelled mention links to its nearest entity; the dictionary also finds the exact name
    assert rows[1]["question_entities"] == ["juno halleck"]
    assert rows[1]["link_sources"][0] == "llm_nearest"
    # nothing found by NER or dictionary: the whole question is embedded (GFM-RAG's fallback)
    assert rows[2]["link_sources"] == ["question_embedding"]
    assert len(rows[2]["question_entities"]) == 1
    assert stats.with_entities == 3
    assert stats.missing_supporting_docs == 1
