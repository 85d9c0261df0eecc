"""Gold search plans from the published benchmarks' chains (indexing/formats/plans.py) and the
planner examples they teach (distillation/gold.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from distillation.config import DistillConfig, GoldSource
from distillation.gold import (
    GoldReport,
    gold_examples,
    gold_paragraphs,
    gold_plan_examples,
    gold_step_questions,
)
from hoprag.planner.enhance import fill_placeholders, referenced_step
from hoprag.planner.gold import gold_plan, update_states
from hoprag.planner.prompts import PLACEHOLDER
from indexing.formats import read_published
from indexing.formats.plans import (
    plan_from_decomposition,
    plan_from_evidences,
    published_plan,
    published_steps,
)

REAL = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "real"


def test_a_musique_decomposition_becomes_a_plan_whose_placeholders_the_updates_fill():
    plan = plan_from_decomposition(
        [
            {"question": "Ruby Loftus Screwing a Breech Ring >> creator", "answer": "Laura Knight"},
            {"question": "#1 >> spouse", "answer": "Harold Knight"},
            {"question": "where was #2 born", "answer": "Nottingham"},
        ]
    )
    assert plan == [
        {
            "step": "What is the creator of Ruby Loftus Screwing a Breech Ring?",
            "answer": "Laura Knight",
            "ref": "[the creator of Ruby Loftus Screwing a Breech Ring]",
        },
        {
            "step": "What is the spouse of [the creator of Ruby Loftus Screwing a Breech Ring]?",
            "answer": "Harold Knight",
            "ref": "[the spouse of the creator of Ruby Loftus Screwing a Breech Ring]",  # flat, as generated
        },
        {
            "step": "Where was [the spouse of the creator of Ruby Loftus Screwing a Breech Ring] born?",
            "answer": "Nottingham",
            "ref": None,
        },
    ]
    steps = gold_plan({"plan": plan})
    assert steps is not None
    states = update_states(steps, "Nottingham")
    assert states[0].rewritten == (
        "What is the spouse of Laura Knight?",
        "Where was [the spouse of the creator of Ruby Loftus Screwing a Breech Ring] born?",
    )
    assert states[1].rewritten == ("Where was Harold Knight born?",)
    assert states[-1].final_answer == "Nottingham"


def test_free_text_sub_questions_name_what_they_find_and_participle_relations_read_as_verbs():
    plan = plan_from_decomposition(
        [
            {"question": "who sings moon river breakfast at tiffany's", "answer": "Audrey Hepburn"},
            {"question": "What is #1 's nationality ?", "answer": "British"},
        ]
    )
    assert plan is not None
    assert plan[0] == {
        "step": "Who sings moon river breakfast at tiffany's?",
        "answer": "Audrey Hepburn",
        "ref": "[the person who sings moon river breakfast at tiffany's]",
    }
    assert (
        plan[1]["step"] == "What is [the person who sings moon river breakfast at tiffany's] 's nationality?"
    )
    copula = plan_from_decomposition(
        [
            {"question": "Who is the performer of Green?", "answer": "Steve Hillage"},
            {"question": "#1 >> sibling", "answer": "X"},
        ]
    )
    assert copula is not None and copula[0]["ref"] == "[the performer of Green]"
    other = plan_from_decomposition(
        [
            {"question": "When did UN troops reach the river?", "answer": "1950"},
            {"question": "What war was in #1?", "answer": "Korean War"},
        ]
    )
    assert other is not None and other[0]["ref"] == "[the answer to when did UN troops reach the river]"
    verb = plan_from_decomposition(
        [
            {"question": "KTRP >> licensed to broadcast to", "answer": "Notus"},
            {"question": "#1 >> located in the administrative territorial entity", "answer": "Canyon County"},
        ]
    )
    assert verb is not None
    assert [s["step"] for s in verb] == [
        "What is KTRP licensed to broadcast to?",
        "What is [what KTRP is licensed to broadcast to] located in?",
    ]


@pytest.mark.parametrize(
    "steps",
    [
        [{"question": "Green >> performer", "answer": "Steve Hillage"}],  # one step: nothing to plan
        [{"question": "#2 >> performer", "answer": "A"}, {"question": "Green >> performer", "answer": "B"}],
        [{"question": "Green >> performer", "answer": ""}, {"question": "#1 >> spouse", "answer": "B"}],
        [{"question": "Green >> performer", "answer": "A"}, {"question": "#1 >> #1", "answer": "B"}],
    ],
)
def test_a_decomposition_that_is_no_chain_gives_no_plan(steps):
    assert plan_from_decomposition(steps) is None


def test_2wiki_evidences_chain_by_name_and_a_comparison_is_two_chains():
    plan = plan_from_evidences(
        [
            ["The Biggest Show on Earth", "director", "Jerome Storm"],
            ["The Secret of the Storm Country", "director", "Charles Miller"],
            ["Jerome Storm", "date of death", "July 10, 1958"],
            ["Charles Miller (director)", "date of death", "November 14, 1936"],  # the label's parenthetical
        ]
    )
    assert plan is not None
    assert [(s["step"], s["ref"]) for s in plan] == [
        ("What is the director of The Biggest Show on Earth?", "[the director of The Biggest Show on Earth]"),
        (
            "What is the director of The Secret of the Storm Country?",
            "[the director of The Secret of the Storm Country]",
        ),
        ("What is the date of death of [the director of The Biggest Show on Earth]?", None),
        ("What is the date of death of [the director of The Secret of the Storm Country]?", None),
    ]
    assert plan_from_evidences([["Niyoti", "publication date", "2016"]]) is None
    assert plan_from_evidences([["A", "director", "B"], ["B", "spouse"]]) is None  # malformed fact


@pytest.mark.parametrize(
    ("path", "fmt", "with_plan"),
    [
        ("musique/dev-sample.jsonl", "musique", True),
        ("2wikimultihopqa/dev-context-sample.json", "2wikimultihopqa", True),
        ("hotpotqa/dev-distractor-sample.json", "hotpotqa", False),  # supporting sentences: no chain
    ],
)
def test_every_placeholder_of_a_real_plan_names_its_step_the_way_the_planner_fills_it(path, fmt, with_plan):
    """The planner substitutes a placeholder by the step whose words it shares
    (:func:`hoprag.planner.enhance.referenced_step`): each placeholder of a plan read from the real
    files must point to the step that defined it, so a taught plan is filled without an LLM call;
    and run as the planner runs it (each step's answer gold, the later steps filled after each
    step against the steps *as run*), every step is asked as :func:`published_steps` writes it."""
    corpus = read_published(REAL / path, fmt, 0.5)
    questions = [q for split in corpus.questions.values() for q in split]
    plans = [p for q in questions if (p := published_plan(q)) is not None]
    if not with_plan:
        assert plans == []
        return
    assert len(plans) == len(questions)
    checked = 0
    for plan in plans:
        assert gold_plan({"plan": plan}) is not None, plan
        defined = {s["ref"]: k for k, s in enumerate(plan) if s["ref"]}
        for k, step in enumerate(plan):
            for placeholder in PLACEHOLDER.findall(step["step"]):
                assert referenced_step(placeholder, [s["step"] for s in plan[:k]]) == defined[placeholder], (
                    plan
                )
                checked += 1
    assert checked >= len(plans) // 2
    for question in questions:
        steps = published_steps(question)
        assert steps is not None
        assert _run_with_gold_answers(published_plan(question) or []) == [s["question"] for s in steps]


def _run_with_gold_answers(plan: list[dict]) -> list[str]:
    """The steps a planner asks along ``plan`` when every step finds its gold answer: after each
    step, the remaining steps are filled by :func:`fill_placeholders` (as ``Planner`` does, only
    when no placeholder names an unknown step) against the steps as they ran."""
    queries = [s["step"] for s in plan]
    found: list[tuple[str, str]] = []
    for done, step in enumerate(plan, start=1):
        found.append((queries[done - 1], step["answer"]))
        filled = fill_placeholders(queries[done:], found)
        if not filled.unresolved:
            queries = queries[:done] + filled.steps
    return queries


def _musique_item(qid: str, title: str, person: str) -> dict:
    return {
        "id": qid,
        "question": f"Who married the director of {title}?",
        "answer": f"Spouse of {person}",
        "answerable": True,
        "paragraphs": [
            {
                "idx": 0,
                "title": title,
                "paragraph_text": f"{title} was directed by {person}.",
                "is_supporting": True,
            },
            {
                "idx": 1,
                "title": person,
                "paragraph_text": f"{person} married Spouse of {person}.",
                "is_supporting": True,
            },
        ],
        "question_decomposition": [
            {"id": 1, "question": f"{title} >> director", "answer": person, "paragraph_support_idx": 0},
            {
                "id": 2,
                "question": "#1 >> spouse",
                "answer": f"Spouse of {person}",
                "paragraph_support_idx": 1,
            },
        ],
    }


def test_only_training_questions_teach_plans_and_no_teacher_runs_for_plan_tasks(tmp_path: Path):
    path = tmp_path / "dev.jsonl"
    path.write_text(
        "".join(json.dumps(_musique_item(f"2hop__{i}", f"Film {i}", f"Person {i}")) + "\n" for i in range(10))
    )
    source = GoldSource(path=str(path), format="musique", train_fraction=0.5)
    train = {q["question"] for q in gold_paragraphs([source], GoldReport()).questions}
    assert 0 < len(train) < 10
    config = DistillConfig(tasks=["plan", "update"], gold={"sources": [source.model_dump()]})
    examples, report = gold_examples(config, tmp_path / "run")
    assert not (tmp_path / "run" / "teacher").exists()  # plans need no extraction
    plans = [e for e in examples if e.task == "plan"]
    assert {
        next(line for line in e.prompt.splitlines() if line.startswith("Question: "))[10:] for e in plans
    } == train
    assert report.plans == len(train) and report.plans_skipped == 0
    assert {e.task for e in examples} == {"plan", "update"}
    assert all(e.target.startswith("1. What is the director of Film ") for e in plans)
    assert (
        gold_plan_examples(gold_paragraphs([source], GoldReport()).questions, DistillConfig(), GoldReport())
        == []
    )


def test_a_chains_steps_become_questions_with_earlier_answers_filled_in_and_their_own_paragraph(
    tmp_path: Path,
):
    """The planner's step answers are taught on the chain's steps as plan enhancement rewrites
    them: each earlier placeholder replaced by its gold answer, shown the paragraph that supports
    that step (MuSiQue: the step's own; 2Wiki: the one named like the fact's subject)."""
    path = tmp_path / "dev.jsonl"
    path.write_text(json.dumps(_musique_item("2hop__1", "Film 1", "Person 1")) + "\n")
    (question,) = read_published(path, "musique", 0.999).questions["train"]
    assert published_steps(question) == [
        {"question": "What is the director of Film 1?", "answer": "Person 1", "supporting_facts": ["Film 1"]},
        {
            "question": "What is the spouse of Person 1?",
            "answer": "Spouse of Person 1",
            "supporting_facts": ["Person 1"],
        },
    ]
    comparison = {
        "question": "Which film's director died first?",
        "supporting_facts": ["Film A", "Film B", "Charles Miller (director)", "Jerome Storm"],
        "evidences": [
            ["Film A", "director", "Jerome Storm"],
            ["Film B", "director", "Charles Miller"],
            ["Jerome Storm", "date of death", "July 10, 1958"],
            ["Charles Miller (director)", "date of death", "November 14, 1936"],
        ],
    }
    steps = published_steps(comparison)
    assert steps is not None
    assert [(s["question"], s["supporting_facts"]) for s in steps] == [
        ("What is the director of Film A?", ["Film A"]),
        ("What is the director of Film B?", ["Film B"]),
        ("What is the date of death of Jerome Storm?", ["Jerome Storm"]),
        ("What is the date of death of Charles Miller?", ["Charles Miller (director)"]),
    ]
    assert published_steps({"question": "Who?", "supporting_facts": ["A"]}) is None  # no chain (HotpotQA)


def test_step_questions_teach_the_answer_prompt_from_training_questions_only(tmp_path: Path):
    """``gold.step_answers``: one answer example per step of each training question's chain, its
    target the step's gold answer and its context the step's supporting paragraph; a test
    question's steps and paragraphs never appear."""
    from distillation.teacher import TeacherReport, answer_examples

    path = tmp_path / "dev.jsonl"
    path.write_text(
        "".join(json.dumps(_musique_item(f"2hop__{i}", f"Film {i}", f"Person {i}")) + "\n" for i in range(10))
    )
    source = GoldSource(path=str(path), format="musique", train_fraction=0.5)
    paragraphs = gold_paragraphs([source], GoldReport())
    train = sorted(int(q["id"].split("__")[1]) for q in paragraphs.questions)
    report = GoldReport()
    steps = gold_step_questions(paragraphs.questions, report)
    assert report.step_questions == len(steps) == 2 * len(train)
    config = DistillConfig(tasks=["answer"], answer={"unknown_fraction": 0.0, "distractor_documents": 1})
    examples = answer_examples(paragraphs.documents, steps, {}, config, TeacherReport())
    assert {(e.prompt.rsplit("Question: ", 1)[1], e.target.strip()) for e in examples} == {
        pair
        for i in train
        for pair in (
            (f"What is the director of Film {i}?\nAnswer:", f"Person {i}"),
            (f"What is the spouse of Person {i}?\nAnswer:", f"Spouse of Person {i}"),
        )
    }
    for e in examples:  # the step's own paragraph is in its context
        subject = (
            e.prompt.rsplit("Question: What is the ", 1)[1].split(" of ", 1)[1].removesuffix("?\nAnswer:")
        )
        assert f"Document: {subject}: " in e.prompt
    shown = "".join(e.prompt for e in examples)
    assert not any(f"Film {i} " in shown or f"Person {i}." in shown for i in set(range(10)) - set(train))
    assert DistillConfig().gold.step_answers is False  # opt in: existing recipes teach what they taught


@pytest.mark.parametrize(
    ("recipe", "tasks", "step_answers"),
    [
        ("planner-student-real-cpu.yaml", {"plan", "update"}, False),
        ("planner-answer-student-real-cpu.yaml", {"plan", "update", "answer"}, True),
    ],
)
def test_the_real_planner_recipes_validate_and_read_the_split_evaluation_uses(recipe, tasks, step_answers):
    from hoprag.config import load_config

    path = Path(__file__).resolve().parents[2] / "distillation" / "configs" / recipe
    config = load_config(DistillConfig, path, [])
    assert set(config.tasks) == tasks and config.gold.step_answers is step_answers
    assert config.gold.sources and all(s.train_fraction == 0.5 for s in config.gold.sources)
    for source in config.gold.sources:
        assert (path.parents[2] / source.path).exists()
    first = path.read_text().splitlines()[0]  # the command that runs it
    assert first.startswith("# hoprag distill ") and first.endswith(f"--config distillation/configs/{recipe}")
