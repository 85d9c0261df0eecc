"""Query-time entity linking is index-time linking: the same function on the question text, with
the index's stored links as a cache of that very call (same snapshot, LLM, prompt, settings)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from hoprag.extraction.prompts import last_block
from hoprag.kg.index import KGIndex
from hoprag.linking.linker import QuestionLinker
from hoprag.llm.base import Completion, GenerationParams, Prompt
from hoprag.planner.llm_calls import CallLedger
from tests.support.film_kg import FILM_QUESTIONS, film_ner_answer, write_film_index


@dataclass
class NamesNER:
    """An NER model that finds the film KG's names in a question however they are cased, and
    returns them as written in the question (as a real NER model does)."""

    model_id: str = "names-ner"
    prompt_style: str = "completion"
    calls: list[str] = field(default_factory=list)

    def generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
        out = []
        for prompt in prompts:
            question = last_block(str(prompt), "Question:", "\nEntities:") or ""
            self.calls.append(question)
            answer = film_ner_answer(question)
            out.append(Completion(text=answer, prompt_tokens=10, completion_tokens=len(answer.split())))
        return out


@pytest.fixture(scope="module")
def ner_index(tmp_path_factory, embedder):
    return KGIndex(write_film_index(tmp_path_factory.mktemp("linking") / "index", embedder, True, NamesNER()))


def test_fresh_query_time_links_equal_the_links_the_index_stored(ner_index, embedder) -> None:
    questions = [q for q, *_ in FILM_QUESTIONS]
    stored = {
        r["question"]: (r["question_entities"], r["link_sources"]) for r in ner_index.questions.to_pylist()
    }
    fresh = QuestionLinker(ner_index, embedder, NamesNER(), use_index_links=False).link(questions)
    assert [(list(x.entities), list(x.sources)) for x in fresh] == [stored[q] for q in questions]
    assert {s for x in fresh for s in x.sources} == {"llm_exact"}  # NER found every seed first


def test_stored_links_serve_as_the_cache_only_for_the_same_llm(ner_index, embedder) -> None:
    questions = [q for q, *_ in FILM_QUESTIONS]
    same = NamesNER()
    assert QuestionLinker(ner_index, embedder, same).link(questions)[1].entities == ("payment on demand",)
    assert same.calls == []  # every question was linked at index time by this very model
    other = NamesNER(model_id="another-ner")
    QuestionLinker(ner_index, embedder, other).link(questions)
    assert len(other.calls) == len(questions)  # another model: linked again, with that model


@dataclass
class NamesNERWithPlanner(NamesNER):
    """The same NER weights served beside a planner student: the model's whole id names both, the
    id of the weights answering NER is the NER model's alone."""

    model_id: str = "names-ner+adapter:planner"

    def task_model_id(self, task: str) -> str:
        return "names-ner" if task == "ner" else self.model_id


def test_stored_links_are_reused_when_a_student_of_another_task_is_added(ner_index, embedder) -> None:
    questions = [q for q, *_ in FILM_QUESTIONS]
    routed = NamesNERWithPlanner()
    linker = QuestionLinker(ner_index, embedder, routed)
    assert linker.model_id == "names-ner"
    assert linker.link(questions)[1].entities == ("payment on demand",)
    assert routed.calls == []  # the NER weights that linked them at index time: no call


def test_a_variant_spelling_is_linked_by_ner_and_cached(ner_index, embedder) -> None:
    llm = NamesNER()
    linker = QuestionLinker(ner_index, embedder, llm)
    ledgers = [CallLedger(), CallLedger()]
    lower, spaced = linker.link(
        ["who directed my cousin from warsaw?", "  Who   is the spouse of CURTIS BERNHARDT? "], ledgers
    )
    # Lower case defeats dictionary matching (entity-like spans only); the NER mention links exactly.
    assert lower.entities == ("my cousin from warsaw",) and lower.sources == ("llm_exact",)
    assert lower.mentions == ("my cousin from warsaw",)
    assert spaced.entities == ("curtis bernhardt",)
    assert [ledger.calls_by_purpose() for ledger in ledgers] == [{"entities": 1}, {"entities": 1}]
    again = CallLedger()
    assert linker.link(["who directed  my cousin from warsaw?"], [again])[0] == lower
    assert len(llm.calls) == 2 and again.calls == 0  # whitespace-normalized question: a cache hit


def test_linking_without_ner_needs_no_llm_and_falls_back_to_the_question_embedding(
    tmp_path, embedder
) -> None:
    index = KGIndex(write_film_index(tmp_path / "index", embedder, questions=True))
    linker = QuestionLinker(index, embedder, None)
    (links,) = linker.link(["which film did the german director make?"])
    assert links.sources == ("question_embedding",) and len(links.entities) == 1
    with pytest.raises(ValueError, match="needs an LLM"):
        QuestionLinker(
            KGIndex(write_film_index(tmp_path / "ner", embedder, True, NamesNER())), embedder, None
        )
