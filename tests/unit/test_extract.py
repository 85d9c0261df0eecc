"""The extraction transform (shared by Ray Data and the sequential baseline) on bad inputs."""

from __future__ import annotations

from hoprag.llm.base import Completion, GenerationParams, Prompt, PromptStyle
from indexing.config import ExtractionConfig
from indexing.extract import LLMExtractor, extract_documents, extract_question_mentions, split_passages
from tests.support.scripted_llm import RuleBasedLLM


class FailingLLM(RuleBasedLLM):
    """Fails every prompt whose passage contains 'Broken' (like an endpoint timing out)."""

    def generate(self, prompts: list[Prompt], params: GenerationParams) -> list[Completion]:
        ok = super().generate(prompts, params)
        return [
            Completion(text="", finish_reason="error", error="timeout")
            if "Broken" in str(p).split("Passage:")[-1]
            else c
            for p, c in zip(prompts, ok, strict=True)
        ]


def test_split_passages_respects_sentences_and_hard_limits():
    text = "Alpha is here. " * 200
    parts = split_passages(text, 300)
    assert all(len(p) <= 300 for p in parts)
    assert " ".join(parts).split() == text.split()
    assert split_passages("", 300) == []
    long_word_run = "x" * 1000
    assert [len(p) for p in split_passages(long_word_run, 300)] == [300, 300, 300, 100]


def test_bad_outputs_and_inputs_are_recorded_not_raised():
    llm = FailingLLM()
    texts = [
        "Mira Castell was born in Dornwick.",
        "Mira Castell starred in The Ember Road. [[GARBAGE]]",
        "[[EMPTY]] Tavin Orlo directed The Ember Road.",
        "",
        "Tavin Orlo was born in Quessa. [[FOURPART]] [[TWOPART]]",
        "Broken Doc was written in Ostrel.",
    ]
    recs = extract_documents(llm, [f"k{i}" for i in range(len(texts))], texts, ExtractionConfig())
    assert [r.status for r in recs] == [
        "ok",
        "unparseable",
        "empty_output",
        "empty_document",
        "ok",
        "llm_error",
    ]
    assert recs[0].triples == [("Mira Castell", "was born in", "Dornwick")]
    # the 4-part and 2-part variants repair into the clean triple, so they are dropped as duplicates
    assert recs[4].triples == [("Tavin Orlo", "was born in", "Quessa")]
    assert recs[4].dropped["duplicate"] == 2
    assert recs[5].error == "timeout"
    assert recs[3].llm_calls == 0


def test_huge_documents_are_chunked_and_capped():
    llm = RuleBasedLLM()
    sentence = "Mira Castell was born in Dornwick. "
    text = sentence * 400  # ~14k characters
    cfg = ExtractionConfig(max_chunk_chars=1000, max_chunks_per_document=5)
    (rec,) = extract_documents(llm, ["big"], [text], cfg)
    assert rec.llm_calls == 5
    # 34-character sentences: 28 fit in 1000 characters (28 * 35 - 1 = 979), so 400 sentences make
    # 15 passages, of which the 10 beyond the first 5 are not extracted
    assert rec.truncated_passages == 10
    assert rec.triples == [("Mira Castell", "was born in", "Dornwick")]  # one triple, de-duplicated


def test_two_step_mode_adds_ner_entities():
    llm = RuleBasedLLM()
    cfg = ExtractionConfig(mode="two_step")
    (rec,) = extract_documents(llm, ["d"], ["Mira Castell was born in Dornwick."], cfg)
    assert rec.llm_calls == 2
    assert llm.calls["ner"] == 1 and llm.calls["openie"] == 1


def test_record_round_trip_and_ray_transform_contract():
    extractor = LLMExtractor.__new__(LLMExtractor)  # skip model construction; use the rule LLM
    extractor.llm = RuleBasedLLM()
    extractor.config = ExtractionConfig()
    out = extractor(
        {
            "task": ["openie", "ner"],
            "doc_key": ["d1", "q1"],
            "text": ["Mira Castell was born in Dornwick.", "Where was Mira Castell born?"],
        }
    )
    assert out["doc_key"] == ["d1", "q1"]
    assert out["status"] == ["ok", "ok"]
    assert '"Mira Castell"' in out["entities_json"][1]
    (q,) = extract_question_mentions(RuleBasedLLM(), ["q"], ["Who directed The Ember Road?"])
    assert q.entities == ["The Ember Road"]


class _ChatRecorder(RuleBasedLLM):
    """A chat-style backend that answers JSON, like an instruct model would."""

    def __init__(self) -> None:
        super().__init__()
        self.prompts: list[Prompt] = []

    @property
    def prompt_style(self) -> PromptStyle:
        return "chat"

    def generate(self, prompts: list[Prompt], params: GenerationParams) -> list[Completion]:
        self.prompts.extend(prompts)
        return [Completion(text='{"triples": [["Mira Castell", "born in", "Dornwick"]]}') for _ in prompts]


def test_chat_backends_get_chat_prompts_and_json_parsing():
    llm = _ChatRecorder()
    (rec,) = extract_documents(llm, ["d"], ["Mira Castell was born in Dornwick."], ExtractionConfig())
    assert isinstance(llm.prompts[0], list) and llm.prompts[0][-1]["role"] == "user"
    assert rec.status == "ok"
    assert rec.triples == [("Mira Castell", "born in", "Dornwick")]
