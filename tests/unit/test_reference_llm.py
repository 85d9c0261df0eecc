"""The reference extractor: exactly the world's facts a passage states, parsed like any LLM output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.extraction.parsing import parse_entity_list, parse_openie_output
from hoprag.extraction.prompts import ner_prompt, openie_prompt
from hoprag.llm.factory import LLMBackendConfig, build_llm, expected_model_id
from hoprag.llm.reference import ReferenceExtractorLLM, ReferenceLLMConfig


def _world(tmp_path: Path) -> Path:
    world = {
        "entities": [
            {"name": "Bigramar", "type": "city", "attributes": {"founded_year": 1814}},
            {"name": "Gerovia", "type": "country", "attributes": {"independence_year": 1745}},
            {"name": "Ava Stone", "type": "person", "attributes": {"birth_year": 1950, "kind": "actor"}},
            {"name": "Ava Stoneham", "type": "person", "attributes": {"birth_year": 1961}},
        ],
        "facts": [
            ["Bigramar", "city_in", "Gerovia"],
            ["Ava Stone", "born_in", "Bigramar"],
            ["Ava Stoneham", "born_in", "Gerovia"],
        ],
    }
    path = tmp_path / "bench" / "raw" / "world.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(world))
    return path


def _extract(llm: ReferenceExtractorLLM, passage: str) -> str:
    spec = openie_prompt(passage, llm.prompt_style)
    return llm.generate([spec.prompt], spec.params)[0].text


def test_openie_gives_the_facts_each_sentence_states_and_they_parse_clean(tmp_path: Path) -> None:
    llm = ReferenceExtractorLLM(ReferenceLLMConfig(world=_world(tmp_path)))
    passage = "Ava Stone, an actor, was born in 1950. Ava Stone was born in Bigramar. Gerovia is far away."
    text = _extract(llm, passage)
    result = parse_openie_output(text, passage)
    assert [tuple(t) for t in result.triples] == [
        ("Ava Stone", "birth year", "1950"),
        ("Ava Stone", "is a", "actor"),
        ("Ava Stone", "born in", "Bigramar"),
    ]
    # Bigramar and Gerovia are both in the passage but never in one sentence: no city_in fact.
    assert not result.dropped


def test_a_name_inside_a_longer_name_is_not_a_mention(tmp_path: Path) -> None:
    llm = ReferenceExtractorLLM(ReferenceLLMConfig(world=_world(tmp_path)))
    text = _extract(llm, "Ava Stoneham was born in Gerovia.")
    assert text.strip() == "(Ava Stoneham | born in | Gerovia)"
    spec = ner_prompt("Where was Ava Stoneham born, and where was Ava Stone born?", "completion")
    assert llm.generate([spec.prompt], spec.params)[0].text == "Ava Stoneham; Ava Stone"


def test_unknown_prompts_and_chat_prompts_get_no_facts(tmp_path: Path) -> None:
    llm = ReferenceExtractorLLM(ReferenceLLMConfig(world=_world(tmp_path)))
    spec = openie_prompt("Bigramar is in Gerovia.", "chat")
    chat = llm.generate([spec.prompt], spec.params)[0]
    assert chat.error and not chat.ok
    assert _extract(llm, "Nothing known here.") == ""


def test_factory_builds_it_and_names_it_without_loading(tmp_path: Path) -> None:
    world = _world(tmp_path)
    config = LLMBackendConfig(backend="reference", reference=ReferenceLLMConfig(world=world))
    assert expected_model_id(config) == build_llm(config).model_id == "reference:bench/world.json"
    with pytest.raises(ValueError, match="reference"):
        LLMBackendConfig(backend="reference")
    with pytest.raises(FileNotFoundError, match="hoprag generate"):
        ReferenceExtractorLLM(ReferenceLLMConfig(world=tmp_path / "missing.json"))


def _ner(llm: ReferenceExtractorLLM, question: str) -> list[str]:
    spec = ner_prompt(question, llm.prompt_style)
    text = llm.generate([spec.prompt], spec.params)[0].text
    _, dropped = parse_entity_list(text, question, spec.output_format)
    assert not dropped, (question, text)  # every mention is grounded in the question
    return [m for m in text.split("; ") if m] if text.strip() else []


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Where was ava stone born?", ["ava stone"]),  # case
        ("Where was AVA STONE born?", ["AVA STONE"]),
        ("Where was Ava-Stone born?", ["Ava-Stone"]),  # punctuation
        ("Where was A. Stone born?", ["A. Stone"]),  # initials
        ("Is gerovia older than the city of Bigramar?", ["Bigramar", "gerovia"]),  # exact names first
        ("Where was A. Stoneham born, in bigramar?", ["A. Stoneham", "bigramar"]),
    ],
)
def test_ner_returns_variant_spellings_as_written(tmp_path: Path, question: str, expected: list[str]) -> None:
    """A real NER model returns the mention as the question writes it, not the KG's spelling (which
    the question does not contain, so indexing would drop it as ungrounded)."""
    llm = ReferenceExtractorLLM(ReferenceLLMConfig(world=_world(tmp_path)))
    assert _ner(llm, question) == expected


def test_ner_on_a_generated_benchmark_finds_every_respelled_topic(tmp_path: Path) -> None:
    from hoprag.llm.reference import _mentions
    from synthetic import SyntheticConfig, write_benchmark
    from synthetic.spelling import EXACT, NameMatcher

    config = SyntheticConfig(seed=4, num_documents=300, num_train_questions=40, num_test_questions=20)
    bench = write_benchmark(config, tmp_path / "bench")
    llm = ReferenceExtractorLLM(ReferenceLLMConfig(world=tmp_path / "bench" / "raw" / "world.json"))
    names = [e.name for e in bench.entities]
    matcher = NameMatcher(names)
    respelled = 0
    for q in bench.train + bench.test:
        mentions = _ner(llm, q["question"])
        if q["spelling"] == EXACT:  # as before variants existed: the world names in the question
            assert mentions == _mentions(q["question"], names), q
            continue
        respelled += 1
        topic = q["supporting_entities"][0]
        if topic not in q["question"]:  # all kinds but an added "the" ("the Brado Systems")
            assert topic not in mentions, q
        assert any(matcher.resolve(m) == {topic} for m in mentions), (q, mentions)
    assert respelled == 12  # round(0.2 × 40) + round(0.2 × 20)


def test_pronouns_resolve_to_the_one_entity_named_before_that_takes_them(tmp_path: Path) -> None:
    world = json.loads(_world(tmp_path).read_text())
    pronouns = {"Bigramar": "it", "Gerovia": "it", "Ava Stone": "she", "Ava Stoneham": "she"}
    for e in world["entities"]:
        e["attributes"]["pronoun"] = pronouns[e["name"]]
    path = tmp_path / "bench" / "raw" / "world.json"
    path.write_text(json.dumps(world))
    llm = ReferenceExtractorLLM(ReferenceLLMConfig(world=path))
    assert llm.triples("Bigramar is old. It lies in Gerovia.") == [("Bigramar", "city in", "Gerovia")]
    assert llm.triples("Ava Stone is here. She was born in Bigramar.") == [
        ("Ava Stone", "born in", "Bigramar")
    ]
    # Two entities named before "she" take it: unresolved, no fact.
    assert llm.triples("Ava Stone met Ava Stoneham. She was born in Bigramar.") == []
    # No entity named before the pronoun: nothing to resolve.
    assert llm.triples("It lies in Gerovia. Bigramar is old.") == []


def test_openie_on_a_generated_benchmark_states_every_fact_of_facts_json(tmp_path: Path) -> None:
    """Pronouns, two-fact sentences and modifiers included, the reference finds every relation fact each
    document states (``facts.json``)."""
    from synthetic import SyntheticConfig, write_benchmark

    bench = write_benchmark(
        SyntheticConfig(seed=4, num_documents=300, num_train_questions=20, num_test_questions=10),
        tmp_path / "b",
    )
    llm = ReferenceExtractorLLM(ReferenceLLMConfig(world=tmp_path / "b" / "raw" / "world.json"))
    pronoun_facts = 0
    for title, text in bench.corpus.items():
        found = {(s, r, o) for s, r, o in llm.triples(text)}
        for f in bench.document_facts[title]:
            if f["type"] == "relation":
                assert (f["head"], f["relation"].replace("_", " "), f["tail"]) in found, (text, f)
                pronoun_facts += f["pronoun"] is not None
    assert pronoun_facts > 20
