"""Student training examples from teacher outputs: targets the parsers read back exactly."""

from __future__ import annotations

from distillation.examples import (
    data_hash,
    ner_example,
    openie_example,
    split_held_out,
    teacher_passages,
)
from hoprag.extraction.parsing import parse_entity_list, parse_openie_output
from hoprag.llm.base import truncate_at_stop
from indexing.config import ExtractionConfig
from indexing.extract import ExtractionRecord

PASSAGE = "Mira Castell was born in Dornwick. She studied at Halvaria College."
TRIPLES = [("Mira Castell", "born in", "Dornwick"), ("Mira Castell", "studied at", "Halvaria College")]


def test_an_openie_target_parses_back_to_the_teachers_triples() -> None:
    record = ExtractionRecord("k", "ok", "teacher", triples=[list(t) for t in TRIPLES])
    example = openie_example("k", PASSAGE, record)
    assert example is not None and example.prompt.count("Passage:") == 1  # the student prompt
    from hoprag.extraction.prompts import openie_prompt

    stop = openie_prompt(PASSAGE, "completion", student=True).params.stop
    generated, stopped = truncate_at_stop(example.target, stop)  # what generation would return
    assert stopped
    parsed = parse_openie_output(generated, PASSAGE)
    assert [tuple(t) for t in parsed.triples] == TRIPLES


def test_no_facts_is_a_lesson_a_failed_teacher_is_not() -> None:
    empty = openie_example("k", "Nothing happens here.", ExtractionRecord("k", "no_triples", "t"))
    assert empty is not None and empty.target == "\n"  # answer nothing, then stop
    assert openie_example("k", PASSAGE, ExtractionRecord("k", "llm_error", "t")) is None
    assert ner_example("q", "Who?", ExtractionRecord("q", "llm_error", "t")) is None


def test_a_ner_target_parses_back_to_the_mentions() -> None:
    question = "Where was Mira Castell born, and when did Halvaria College open?"
    example = ner_example(
        "q", question, ExtractionRecord("q", "ok", "t", entities=["Mira Castell", "Halvaria College"])
    )
    assert example is not None and example.prompt.endswith("Entities:")
    generated, _ = truncate_at_stop(example.target, ("\n",))
    assert parse_entity_list(generated, question)[0] == ["Mira Castell", "Halvaria College"]


def test_passages_are_what_indexing_prompts_with_once_each() -> None:
    config = ExtractionConfig(max_chunk_chars=200, max_chunks_per_document=2)
    long = " ".join(f"Alpha Beta{i} was born in Gamma{i}." for i in range(30))  # ~900 characters
    passages = teacher_passages([PASSAGE, PASSAGE, long], config)
    assert len(passages) == 1 + 2  # the repeated document once; the long one cut to 2 passages
    assert all(len(p) <= 200 for _, p in passages) and len({k for k, _ in passages}) == 3


def test_the_held_out_split_is_stable_and_the_data_hash_ignores_order() -> None:
    record = ExtractionRecord("k", "ok", "t", triples=[list(TRIPLES[0])])
    examples = [openie_example(f"key-{i}", PASSAGE, record) for i in range(200)]
    train, held = split_held_out(examples, 0.25)
    assert 30 <= len(held) <= 70 and len(train) + len(held) == 200
    _, again_held = split_held_out(list(reversed(examples)), 0.25)
    assert {e.key for e in again_held} == {e.key for e in held}
    assert data_hash(examples) == data_hash(reversed(examples)) != data_hash(examples[1:])
