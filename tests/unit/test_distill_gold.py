"""Real-prose student examples: a teacher's triples corrected by gold facts (distillation/gold.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from distillation.config import DistillConfig, GoldSource
from distillation.gold import (
    GoldReport,
    corrected_triples,
    gold_paragraphs,
    relation_stated,
    spelled_name,
    word_stems,
)
from indexing.formats.reader import train_test_split

LOTHAIR = (
    "Lothair II (835 – 8 August 869) was the king of Lotharingia. He was the second son of Emperor "
    "Lothair I and Ermengarde of Tours. He died in Piacenza."
)


def test_a_name_is_spelled_as_the_passage_spells_it_or_not_at_all():
    assert spelled_name("ermengarde of tours", LOTHAIR) == "Ermengarde of Tours"
    assert spelled_name("Lothair II (king)", LOTHAIR) == "Lothair II"  # a label's parenthetical
    assert spelled_name("Lothair", "Lothairingia") is None  # whole words only
    assert spelled_name("Teutberga", LOTHAIR) is None


def test_a_relation_counts_as_stated_when_a_content_word_shares_its_first_four_letters():
    stems = word_stems(LOTHAIR)
    assert relation_stated("died in", stems)
    assert relation_stated("son of", stems)
    assert relation_stated("is a", stems)  # function words only: nothing to check
    assert not relation_stated("born in", stems)  # "son of" is not "born in"
    assert not relation_stated("birth year", stems)


def test_gold_facts_relabel_the_teachers_pair_add_what_it_missed_and_drop_unstated_relations():
    teacher = [
        ("Lothair II", "born in", "Ermengarde of Tours"),  # the right pair, a synthetic relation
        ("Lothair II", "died in", "Piacenza"),  # stated: kept
        ("Lothair II", "birth year", "8 August 869"),  # the pair of a gold fact: relabelled
        ("Lothair II", "born in", "Lotharingia"),  # not stated ("king of Lotharingia"): dropped
    ]
    facts = [
        ("Lothair II", "mother", "Ermengarde of Tours"),
        ("Lothair II", "father", "Lothair I"),  # missed by the teacher: added with the passage's names
        ("Lothair II", "date of death", "8 August 869"),
        ("Lothair II", "spouse", "Teutberga"),  # the passage does not spell her: left out
    ]
    report = GoldReport()
    triples = corrected_triples(LOTHAIR, teacher, facts, report, drop_unstated=True)
    assert triples == [
        ("Lothair II", "mother", "Ermengarde of Tours"),
        ("Lothair II", "father", "Lothair I"),
        ("Lothair II", "date of death", "8 August 869"),
        ("Lothair II", "died in", "Piacenza"),
    ]
    assert (report.relabelled, report.added, report.unspelled) == (2, 1, 1)
    assert len(report.facts_taught) == 3
    assert (report.teacher_triples_kept, report.teacher_triples_dropped) == (1, 1)


def test_a_relabelled_pair_takes_the_gold_direction_and_the_passages_spelling_of_the_gold_names():
    passage = "The film Midnight Court was directed by Frank McDonald (1937)."
    teacher = [("frank mcdonald", "directed", "Midnight Court")]
    fact = ("Midnight Court (film)", "director", "Frank McDonald")
    assert corrected_triples(passage, teacher, [fact], GoldReport()) == [
        ("Midnight Court", "director", "Frank McDonald")
    ]
    # a date the teacher cut short comes out whole; a name the passage spells otherwise stays the teacher's
    passage = "Ringo Lam (December 8, 1955 – December 29, 2018) was a Hong Kong film director."
    teacher = [("Ringo Lam", "birth year", "1955"), ("Ringo Lam", "is a", "film director")]
    fact = ("Ringo Lam Ling-Tung", "date of birth", "December 8, 1955")
    assert corrected_triples(passage, teacher, [fact], GoldReport()) == [
        ("Ringo Lam", "date of birth", "December 8, 1955"),
        ("Ringo Lam", "is a", "film director"),
    ]


def _two_wiki_item(qid: str, title: str, text: str, facts: list[list[str]], other: str) -> dict:
    return {
        "_id": qid,
        "question": f"Who is related to {title}?",
        "answer": facts[0][2],
        "type": "compositional",
        "context": [[title, [text]], [other, [f"{other} is a distractor paragraph."]]],
        "supporting_facts": [[title, 0]],
        "evidences": facts,
    }


def test_only_training_questions_teach_and_no_test_paragraph_is_ever_shown(tmp_path: Path):
    ids = [f"q{i}" for i in range(12)]
    split = train_test_split([{"id": i} for i in ids], 0.5)
    train_ids = {q["id"] for q in split["train"]}
    assert 0 < len(train_ids) < len(ids)
    shared = "Shared Paragraph"  # supports a training and a test question: held out
    items = []
    for i, qid in enumerate(ids):
        title, person = (shared, "Person S") if i < 2 else (f"Film {i}", f"Person {i}")
        text = f"{title} is a film directed by {person}."
        items.append(_two_wiki_item(qid, title, text, [[title, "director", person]], f"Other {i}"))
    assert len({"q0", "q1"} & train_ids) == 1  # the fixed ids' hashes put one on each side
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(items))
    report = GoldReport()
    paragraphs = gold_paragraphs([GoldSource(path=str(path), format="2wikimultihopqa")], report)
    titles = {d.title for d in paragraphs.documents}
    assert shared not in titles and shared not in {d.title for d in paragraphs.distractor_pool}
    expected = {f"Film {int(q[1:])}" for q in train_ids if int(q[1:]) >= 2}
    assert titles == expected
    assert {q["id"] for q in paragraphs.questions} == {q for q in train_ids if int(q[1:]) >= 2}
    for title in titles:
        assert paragraphs.facts[title] == [(title, "director", f"Person {title.split()[1]}")]
    assert report.train_questions == len(train_ids) and report.paragraphs_held_out >= 1


def test_the_real_prose_recipe_validates_and_starts_from_the_shipped_recipes_adapter():
    from hoprag.config import load_config

    recipe = Path(__file__).resolve().parents[2] / "distillation" / "configs" / "student-real-prose-cpu.yaml"
    config = load_config(DistillConfig, recipe, [])
    assert config.gold.sources and all(s.train_fraction == 0.5 for s in config.gold.sources)
    assert config.init_adapter == "runs/student/adapter"
    for source in config.gold.sources:
        assert (recipe.parents[2] / source.path).exists()


def test_init_adapter_resolves_to_an_absolute_directory_or_fails_before_the_teacher_runs(tmp_path: Path):
    from distillation.job import _init_adapter
    from hoprag.llm.adapters import packaged_student_dir

    assert _init_adapter(DistillConfig()) is None
    assert _init_adapter(DistillConfig(init_adapter="packaged")) == str(packaged_student_dir().resolve())
    with pytest.raises(ValueError, match=r"no .*adapter_model\.safetensors"):
        _init_adapter(DistillConfig(init_adapter=str(tmp_path)))
    with pytest.raises(ValueError, match="packaged base only"):
        _init_adapter(DistillConfig(init_adapter="packaged", base={"model_path": str(tmp_path)}))


def test_a_committee_adds_only_the_pairs_the_first_teacher_did_not_link():
    from indexing.formats.gold import committee_triples

    first = [["Jerome Storm", "born in", "Denver"], ["The Show", "directed by", "Jerome Storm"]]
    student = [
        ["Jerome Storm", "date of birth", "November 11, 1890"],  # a pair the first teacher missed
        ["jerome storm", "director of", "The Show"],  # the first teacher's pair, either direction
        ["Jerome Storm", "date of birth", "1890"],
        ["broken row"],
    ]
    assert committee_triples(first, [student]) == [
        ("Jerome Storm", "born in", "Denver"),
        ("The Show", "directed by", "Jerome Storm"),
        ("Jerome Storm", "date of birth", "November 11, 1890"),
        ("Jerome Storm", "date of birth", "1890"),
    ]
    assert committee_triples(first, []) == [tuple(t) for t in first]


def test_gold_examples_teach_the_committees_triples_from_the_teachers_cached_answers(tmp_path: Path):
    """Two teachers' answers already in the run's teacher cache (as a teacher set seeds it): the
    OpenIE example holds the first teacher's triples, the second's new pair, and the gold fact."""
    from distillation.gold import gold_examples
    from distillation.teacher_set import teacher_cache
    from hoprag.llm.factory import LLMBackendConfig, expected_model_id
    from hoprag.text import content_hash
    from indexing.extract import ExtractionRecord, extraction_key

    ids = [f"q{i}" for i in range(12)]
    items = []
    for i, qid in enumerate(ids):
        title = f"Film {i}"
        text = f"{title} (1950) is a film directed by Person {i}, born in Town {i}."
        items.append(_two_wiki_item(qid, title, text, [[title, "director", f"Person {i}"]], f"Other {i}"))
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(items))
    teachers = [
        {"backend": "openai", "openai": {"base_url": "http://127.0.0.1:9", "model": m}}
        for m in ("big", "small")
    ]
    config = DistillConfig.model_validate(
        {
            "tasks": ["openie"],
            "gold": {
                "sources": [{"path": str(path), "format": "2wikimultihopqa"}],
                "teacher": teachers[0],
                "extra_teachers": [teachers[1]],
            },
        }
    )
    paragraphs = gold_paragraphs(config.gold.sources, GoldReport())
    extraction = config.extraction.model_copy(update={"mode": "one_step"})
    rows = []
    for doc in paragraphs.documents:
        i = doc.title.split()[1]
        answers = {
            "big": [[doc.title, "released in", "1950"]],
            "small": [[f"Person {i}", "born in", f"Town {i}"], [doc.title, "year", "1950"]],
        }
        for teacher in teachers:
            model_id = expected_model_id(LLMBackendConfig.model_validate(teacher))
            key = extraction_key(content_hash(doc.text), model_id, extraction)
            triples = answers[teacher["openai"]["model"]]
            rows.append(ExtractionRecord(key, "ok", model_id, triples=triples).to_row())
    teacher_cache(tmp_path / "run").append_rows(rows)
    examples, report = gold_examples(config, tmp_path / "run")
    assert len(examples) == len(paragraphs.documents) and report.teacher_failed == 0
    assert report.committee_triples_added == len(paragraphs.documents)  # one new pair each
    for example in examples:
        film = next(line for line in example.prompt.splitlines() if "is a film" in line)
        i = film.split("Film ")[1].split()[0]
        assert set(example.target.strip().splitlines()) == {
            f"(Film {i} | director | Person {i})",
            f"(Film {i} | released in | 1950)",
            f"(Person {i} | born in | Town {i})",
        }
