"""hoprag bench evidences: the gold-fact matching rules and the output-form counts (benchmarks/evidences.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from benchmarks.evidences import (
    EvidenceQuestions,
    committee_scores,
    load_evidence_questions,
    output_forms,
    score_questions,
)
from benchmarks.extract import BenchDocuments, BenchInputError
from indexing.extract import ExtractionRecord
from indexing.formats.gold import gold_facts, pair_found

REAL = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "real" / "2wikimultihopqa"


def test_a_pair_is_found_in_either_direction_and_loosely_when_one_name_contains_the_other():
    fact = ("Midnight Court (film)", "director", "Frank McDonald")
    assert pair_found(fact, [("Frank McDonald", "directed", "midnight court (film)")], loose=False)
    assert not pair_found(fact, [("Midnight Court", "directed by", "Frank McDonald")], loose=False)
    assert pair_found(fact, [("Midnight Court", "directed by", "Frank McDonald")], loose=True)
    # containment is by whole words: "Frank" is not "Franklin"
    assert not pair_found(fact, [("Midnight Court", "directed by", "Franklin McDonald Jr")], loose=True)
    assert not pair_found(fact, [("Midnight Court", "released in", "1937")], loose=True)


def test_the_real_sample_loads_with_each_supporting_paragraph_once():
    questions = load_evidence_questions(REAL / "2wikimultihopqa.json")
    assert len(questions.ids) == 10 and all(questions.paragraphs) and all(questions.facts)
    titles = questions.documents.titles
    assert len(titles) == len(set(titles)) == len({p for ps in questions.paragraphs for p in ps})


def test_recall_counts_a_fact_only_among_its_own_questions_paragraphs():
    docs = BenchDocuments(["A", "B", "C"], ["a", "b", "c"], [[], [], []])
    questions = EvidenceQuestions(
        ["q1", "q2"],
        [[("Ann", "mother", "Bea"), ("Ann", "born", "1901")], [("Cal", "director", "Dee")]],
        [[0, 1], [2]],
        docs,
    )
    triples = [[("Bea", "mother of", "Ann")], [], [("Ann", "born in", "1901")]]  # the second is in q2's
    scores = score_questions(questions, triples)
    assert scores["gold_facts"] == 3 and scores["pair_recall_equal"] == round(1 / 3, 4)
    assert scores["pair_recall_loose_by_relation"] == {
        "born": [0.0, 1],
        "director": [0.0, 1],
        "mother": [1.0, 1],
    }


def test_a_file_without_gold_facts_is_refused(tmp_path):
    path = tmp_path / "hotpot.json"
    path.write_text((REAL.parent / "hotpotqa" / "dev-distractor-sample.json").read_text(encoding="utf-8"))
    with pytest.raises(BenchInputError, match="no question with gold facts"):
        load_evidence_questions(path)


def _record(status: str, dropped: dict[str, int], repaired: int = 0) -> ExtractionRecord:
    return ExtractionRecord(
        doc_key="d", status=status, model_id="m", dropped=Counter(dropped), repaired=repaired
    )  # type: ignore[arg-type]


def test_outputs_lost_to_their_form_are_told_from_outputs_lost_to_their_content():
    forms = output_forms(
        [
            _record("ok", {"passage_json_repaired": 1, "ungrounded": 2}, repaired=1),
            _record("unparseable", {"passage_unparseable": 1}),
            _record("no_triples", {"passage_no_triples": 1, "two_parts": 2, "too_few_parts": 1}),  # form
            _record("no_triples", {"passage_no_triples": 1, "two_parts": 1, "ungrounded": 1}),  # content too
            _record("empty_output", {"passage_empty_output": 1}),
        ]
    )
    assert forms["format_lost"] == 2
    assert forms["json_repaired_outputs"] == 1 and forms["repaired_rows"] == 1
    assert forms["statuses"] == {"ok": 1, "unparseable": 1, "no_triples": 2, "empty_output": 1}
    assert forms["dropped_rows"] == {"two_parts": 3, "ungrounded": 3, "too_few_parts": 1}


def test_musique_decomposition_hops_written_as_wikidata_relations_are_gold_facts():
    """``X >> relation`` steps with an answer are facts; ``#1 >> ...`` (an earlier answer) and
    free-text sub-questions are not."""
    question = {
        "decomposition": [
            {"question": "Country Man >> performer", "answer": "Luke Bryan"},
            {"question": "#1 >> place of birth", "answer": "Leesburg"},
            {"question": "who sings home alone tonight with #1", "answer": "Karen Fairchild"},
            {"question": "Scion >> owned by", "answer": " "},
        ]
    }
    assert gold_facts(question) == [("Country Man", "performer", "Luke Bryan")]
    assert gold_facts({"evidences": [["A", "director", "B"]], "decomposition": []}) == [
        ("A", "director", "B")
    ]
    sample = load_evidence_questions(REAL.parent / "musique" / "dev-sample.jsonl")
    assert len(sample.ids) >= 20 and all(sample.facts) and all(sample.paragraphs)
    assert sum(len(f) for f in sample.facts) == 41  # the sample's hops with a named subject


def test_a_relation_fits_a_wikidata_property_by_its_stated_words():
    from benchmarks.evidences import relation_fits

    assert relation_fits("director", "directed by")
    assert relation_fits("father", "son of")
    assert relation_fits("date of death", "died on")
    assert not relation_fits("mother", "born in")
    assert not relation_fits("date of death", "birth year")
    # a property without listed words: a content word's first four letters
    assert relation_fits("manufacturer", "manufactured by")
    assert not relation_fits("manufacturer", "sold by")


def test_the_train_side_is_the_complement_of_the_test_side():
    """``--side train`` scores the questions a prompt may be chosen on; the test side stays apart."""
    path = REAL / "dev-context-sample.json"
    test = load_evidence_questions(path, "2wikimultihopqa", train_fraction=0.5)
    train = load_evidence_questions(path, "2wikimultihopqa", train_fraction=0.5, side="train")
    everything = load_evidence_questions(path, "2wikimultihopqa")
    assert train.ids and test.ids and not set(train.ids) & set(test.ids)
    assert sorted(train.ids + test.ids) == sorted(everything.ids)
    with pytest.raises(BenchInputError, match="needs --train-fraction"):
        load_evidence_questions(path, "2wikimultihopqa", side="train")
    with pytest.raises(BenchInputError, match="side must be"):
        load_evidence_questions(path, "2wikimultihopqa", train_fraction=0.5, side="dev")


def test_a_committee_finds_the_pairs_of_either_member_and_keeps_the_first_members_relation():
    docs = BenchDocuments(["A", "B"], ["a", "b"], [[], []])
    questions = EvidenceQuestions(
        ["q1"], [[("Ann", "date of birth", "1901"), ("Ann", "director of", "Film")]], [[0, 1]], docs
    )
    outputs = [
        {
            "systems": {
                "big": {"triples": [["Ann", "directed", "Film"]]},
                "small": {"triples": [["Film", "made by", "Ann"]]},  # a pair big linked in this paragraph
            }
        },
        {"systems": {"big": {"triples": []}, "small": {"triples": [["Ann", "born", "1901"]]}}},
    ]
    big_alone = committee_scores(questions, outputs, ["big"])
    assert big_alone["pair_recall_loose"] == 0.5
    both = committee_scores(questions, outputs, ["big", "small"])
    assert both["pair_recall_loose"] == 1.0 and both["triples_per_paragraph"] == 1.0
    # the film pair is the first member's, with its relation; the second member adds the date only
    assert [p["triples"] for p in both["pairs"]] == [[["Ann", "born", "1901"]], [["Ann", "directed", "Film"]]]


def test_a_committee_of_systems_not_run_is_refused_before_any_model_loads(capsys):
    from hoprag_cli import main

    args = ["bench", "evidences", "--benchmark", str(REAL / "2wikimultihopqa.json"), "--systems", "student"]
    assert main([*args, "--committee", "student+qwen"]) != 0
    assert "--committee student+qwen: name two or more of the systems run" in capsys.readouterr().err
