"""The embedded Gemma 3 270M for real: generation, the converted-weights cache, HTTP, Ray Data."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from hoprag.extraction.prompts import openie_prompt
from hoprag.kg.index import KGIndex
from hoprag.llm.base import GenerationParams
from hoprag.llm.embedded import EmbeddedLLMConfig
from hoprag.llm.openai_compat import OpenAICompatibleConfig, OpenAICompatibleLLM
from hoprag.llm.openai_server import OpenAIProtocolServer
from hoprag.paths import SAMPLE_CORPUS
from hoprag.ray_runtime import RayConfig
from indexing.config import ExtractionConfig, IndexConfig
from indexing.corpus import read_corpus
from indexing.pipeline import build_index

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def gemma():
    """The base model (no adapter: few-shot prompts)."""
    from hoprag.llm.embedded import EmbeddedLLM

    return EmbeddedLLM(EmbeddedLLMConfig(adapter=None))


@pytest.fixture(scope="module")
def random_adapter():
    """Writes a real PEFT LoRA adapter of the packaged Gemma (q/v projections, rank 4, random A and
    non-zero random B, so it changes the function) listing ``tasks``: ``write(path, tasks, seed)``.
    The base weights are loaded once; each adapter is unloaded from them after it is saved."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from hoprag.llm.embedded import ensure_converted_checkpoint

    base = AutoModelForCausalLM.from_pretrained(str(ensure_converted_checkpoint()), dtype=torch.float32)

    def write(path: Path, tasks: list[str], seed: int) -> Path:
        nonlocal base
        torch.manual_seed(seed)
        lora = LoraConfig(r=4, lora_alpha=64, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
        peft_model = get_peft_model(base, lora)
        peft_model.save_pretrained(str(path))
        base = peft_model.unload()
        (path / "student.json").write_text(json.dumps({"tasks": tasks}))
        return path

    return write


@pytest.fixture(scope="module")
def shipped():
    """The default embedded LLM: the base model with the distilled student shipped with hoprag."""
    from hoprag.llm.embedded import EmbeddedLLM

    return EmbeddedLLM()


def test_batched_generation_with_stop_sequences(gemma):
    spec = openie_prompt(
        "Juno Halleck was born in Quifen. Juno Halleck studied at Carrow College.", "completion"
    )
    out = gemma.generate([spec.prompt, spec.prompt + "(Juno"], spec.params)
    assert len(out) == 2 and all(c.ok for c in out)
    assert all("\n\n" not in c.text and "Passage:" not in c.text for c in out)
    assert "(" in out[0].text and out[0].prompt_tokens > 100 and out[0].completion_tokens > 0
    short = gemma.generate(["Once upon a time"], GenerationParams(max_new_tokens=3))
    assert short[0].completion_tokens <= 3
    assert gemma.model_id == f"embedded:gemma-3-270m-q4_k_m@{gemma.config.compute_dtype}"


def test_streaming_gives_the_completion_generate_gives_and_stops_when_cancelled(gemma):
    from hoprag.llm.base import Completion
    from hoprag.llm.streaming import CancelToken, collect

    spec = openie_prompt(
        "Juno Halleck was born in Quifen. Juno Halleck studied at Carrow College.", "completion"
    )
    deltas, streamed = collect(gemma.stream(spec.prompt, spec.params))
    generated = gemma.generate([spec.prompt], spec.params)[0]
    assert len(deltas) > 3 and "".join(deltas) == streamed.text
    assert streamed == generated  # same tokens, same stop cut, same counts
    token = CancelToken()
    long = GenerationParams(max_new_tokens=200)
    stream = gemma.stream("Once upon a time", long, token)
    next(stream)
    token.cancel()
    rest = list(stream)
    assert isinstance(rest[-1], Completion) and rest[-1].completion_tokens < 50
    closed = gemma.stream("Once upon a time", long)
    next(closed)
    before = gemma.streams_cancelled
    closed.close()  # the consumer went away: the generation thread stops and is joined
    assert gemma.streams_cancelled == before + 1


def test_the_packaged_tokenizers_grammar_view_equals_llguidances_own(gemma):
    """hoprag reads Gemma's 262k token bytes from the vocabulary (hoprag/llm/tokenizer_view.py, 3-6x
    faster to build); a transformers or llguidance release that changes either side shows here."""
    import llguidance.hf

    from benchmarks.grammar import differing_tokens
    from hoprag.llm.tokenizer_view import token_bytes, tokenizer_view

    tokenizer = gemma._tokenizer
    assert token_bytes(tokenizer) is not None
    ours = tokenizer_view(tokenizer, len(tokenizer))
    theirs = llguidance.hf.from_tokenizer(tokenizer, n_vocab=len(tokenizer), slices=[])
    assert differing_tokens(ours, theirs, len(tokenizer)) == []  # bytes and special flags
    assert ours.eos_tokens == theirs.eos_tokens
    text = "(Juno Halleck | born in | Quifen)\n héllo 日本\t\n\n<table>"
    assert ours.tokenize_str(text) == theirs.tokenize_str(text)


def test_second_load_uses_the_converted_cache(gemma, monkeypatch):
    import hoprag.llm.embedded as embedded

    def _fail(*_args, **_kwargs):
        raise AssertionError("the GGUF was converted again")

    monkeypatch.setattr(embedded, "_convert_gguf", _fail)
    again = embedded.EmbeddedLLM(embedded.EmbeddedLLMConfig(adapter=None))
    assert (embedded.converted_checkpoint_dir() / "model.safetensors").is_file()
    assert again.model_id == gemma.model_id  # loaded from the cache (a conversion would have failed)


def test_a_lora_adapter_loads_merged_changes_the_output_and_the_model_id(gemma, random_adapter, tmp_path):
    """A real PEFT LoRA adapter of the packaged Gemma (random, non-zero B so it changes the
    function), loaded by config as a distilled student would be: its tasks get the adapter, other
    prompts the base model."""
    from hoprag.llm.embedded import EmbeddedLLM, EmbeddedLLMConfig
    from hoprag.planner.prompts import plan_prompt

    adapter = random_adapter(tmp_path / "adapter", ["openie"], seed=0)
    student = EmbeddedLLM(EmbeddedLLMConfig(adapter=str(adapter)))
    assert student.student_tasks == {"openie"}
    assert student.model_id.startswith(gemma.model_id + "+adapter:")
    spec = openie_prompt("Juno Halleck was born in Quifen.", "completion", student=True)
    before, after = (
        gemma.generate([spec.prompt], spec.params)[0],
        student.generate([spec.prompt], spec.params)[0],
    )
    assert before.ok and after.ok and before.text != after.text
    # A task the student was not trained on (the planner's plan) is the base model's, token for token.
    plan = plan_prompt("Where was the director of Marrow Lane born?", "completion")
    assert plan.params.task == "plan"
    # which weights answer shows within a few tokens; a random adapter would babble to the limit
    short = replace(plan.params, max_new_tokens=16)
    assert student.generate([plan.prompt], short) == gemma.generate([plan.prompt], short)
    forced = replace(short, task="openie")  # the same prompt through the adapter differs
    assert student.generate([plan.prompt], forced) != gemma.generate([plan.prompt], forced)


def test_a_planner_student_beside_the_shipped_one_serves_only_the_planner_tasks(
    gemma, shipped, random_adapter, tmp_path
):
    """``adapter: [packaged, PLANNER]``: the shipped student keeps its tasks token for token, the
    second student (a real random LoRA listing plan and update) gets the planner's prompts, and a
    prompt of neither (the judge's) is the base model's."""
    from evaluation.judge import judge_prompt
    from hoprag.llm.adapters import adapter_fingerprint
    from hoprag.llm.embedded import EmbeddedLLM
    from hoprag.planner.prompts import plan_prompt

    planner = random_adapter(tmp_path / "planner", ["plan", "update"], seed=1)
    both = EmbeddedLLM(EmbeddedLLMConfig(adapter=["packaged", str(planner)]))
    assert both.student_tasks == {"openie", "ner", "answer", "plan", "update"}
    assert both.model_id == f"{shipped.model_id}+adapter:{adapter_fingerprint(planner)}"
    spec = openie_prompt("Juno Halleck was born in Quifen.", "completion", student=True)
    assert both.generate([spec.prompt], spec.params) == shipped.generate([spec.prompt], spec.params)
    plan = plan_prompt("Where was the director of Marrow Lane born?", "completion", student=True)
    assert plan.params.task == "plan"
    short = replace(plan.params, max_new_tokens=16)  # the weights show in a few tokens (see above)
    planned = both.generate([plan.prompt], short)
    assert planned[0].ok and planned != shipped.generate([plan.prompt], short)  # base, for shipped
    judge = judge_prompt("Where was Juno Halleck born?", ["Quifen"], "Quifen", "completion")
    assert both.generate([judge.prompt], judge.params) == gemma.generate([judge.prompt], judge.params)
    # one stop-string criterion per checkpoint and stop tuple in the process, whichever LLM built it
    assert both._stop_string_criterion(judge.params.stop) is gemma._stop_string_criterion(judge.params.stop)


def test_the_shipped_student_extracts_links_and_answers_with_its_short_prompts(shipped):
    """The default embedded LLM is the distilled student: on a passage with names it never saw it
    extracts the facts the base model misses, finds the question's entities, and answers a two-hop
    question from facts and a document (the retrieve-mode prompt)."""
    from hoprag.extraction.parsing import parse_entity_list, parse_openie_output
    from hoprag.extraction.prompts import ner_prompt
    from hoprag.planner.parsing import parse_answer
    from hoprag.planner.prompts import answer_prompt

    student = shipped
    assert student.student_tasks == {"openie", "ner", "answer"}
    passage = "Velmora Tesk is a painter. She was born in Quillan. Velmora Tesk studied at Arden Polytechnic."
    spec = openie_prompt(passage, "completion", student=True)
    (out,) = student.generate([spec.prompt], spec.params)
    pairs = {frozenset((h.lower(), t.lower())) for h, _, t in parse_openie_output(out.text, passage).triples}
    assert {frozenset(("velmora tesk", "quillan")), frozenset(("velmora tesk", "arden polytechnic"))} <= pairs
    assert out.prompt_tokens < 60  # instruction + passage: no few-shot block
    # decoded under the line grammar (OPENIE_LINES_GRAMMAR): every line is a whole triple
    assert all(
        re.fullmatch(r"\([^|()\n]+\|[^|()\n]+\|[^|()\n]+\)", line) for line in out.text.splitlines() if line
    )

    question = "Where was the director of Marrow Lane born?"
    spec = ner_prompt(question, "completion", student=True)
    (out,) = student.generate([spec.prompt], spec.params)
    assert parse_entity_list(out.text, question, "lines")[0] == ["Marrow Lane"]

    facts = [
        "Marrow Lane | directed by | Oskin Prell",
        "Oskin Prell | born in | Dovetree",
        "Marrow Lane | release year | 1988",
    ]
    documents = [
        "Marrow Lane: Marrow Lane is a 1988 film directed by Oskin Prell.",
        "Oskin Prell: Oskin Prell is a director born in Dovetree.",
    ]
    spec = answer_prompt(question, facts, "completion", documents, student=True)
    (out,) = student.generate([spec.prompt], spec.params)
    assert parse_answer(out.text).value == "Dovetree"


def test_embedded_model_behind_the_openai_protocol(gemma):
    import openai

    with OpenAIProtocolServer(gemma, model_name="gemma") as server:
        client = OpenAICompatibleLLM(
            OpenAICompatibleConfig(
                base_url=server.base_url, model="gemma", prompt_style="completion", timeout_s=120
            )
        )
        spec = openie_prompt("Oriel Fane directed The Salt Ledger.", "completion")
        (completion,) = client.generate([spec.prompt], spec.params)
        assert completion.ok and "(" in completion.text
        official = openai.OpenAI(base_url=server.base_url, api_key="unused", timeout=120)
        resp = official.completions.create(model="gemma", prompt="The capital of Quifen is", max_tokens=5)
        assert resp.choices[0].text.strip()
        chat = official.chat.completions.create(
            model="gemma", messages=[{"role": "user", "content": "Say hello."}], max_tokens=5
        )
        assert isinstance(chat.choices[0].message.content, str)


@pytest.fixture(scope="module")
def gemma_index(tmp_path_factory, ray_cluster):
    """Six sample documents indexed by the embedded model through Ray Data: (index dir, summary, questions)."""
    tmp_path = tmp_path_factory.mktemp("gemma-index")
    sample = read_corpus(SAMPLE_CORPUS)
    raw = tmp_path / "corpus" / "raw"
    raw.mkdir(parents=True)
    docs = sample.documents[:6]
    (raw / "dataset_corpus.json").write_text(json.dumps({d.title: d.text for d in docs}))
    titles = {d.title for d in docs}
    questions = [q for q in sample.questions["train"] if set(q["supporting_facts"]) & titles][:3]
    (raw / "test.json").write_text(json.dumps(questions))
    cfg = IndexConfig(
        extraction=ExtractionConfig(batch_size=3, num_cpus=1), ray=RayConfig(address=ray_cluster)
    )
    summary = build_index(tmp_path / "index", cfg, corpus=read_corpus(tmp_path / "corpus"))
    return tmp_path / "index", summary, questions


def test_ray_data_pipeline_with_the_embedded_model(gemma_index):
    index_dir, summary, questions = gemma_index
    assert summary.documents == 6 and summary.extracted_now == 6
    assert set(summary.statuses) <= {"ok", "no_triples", "unparseable", "empty_output"}
    assert summary.statuses["ok"] >= 3  # the 270M model extracts something from most documents
    assert summary.questions == len(questions) == summary.questions_with_entities
    ix = KGIndex(index_dir, verify=True)
    assert ix.num_triples >= 3
    # The default embedded LLM is the shipped student (its adapter's hash is in the model id).
    dtype = EmbeddedLLMConfig().compute_dtype
    assert ix.manifest["llm_model_id"].startswith(f"embedded:gemma-3-270m-q4_k_m@{dtype}+adapter:")


def test_ask_answers_end_to_end_with_the_embedded_model(gemma_index, capsys):
    """`hoprag ask` with the embedded student answering: real plan, KG search and answer calls
    (quality aside; the default answering model is the 1.5B, tests/unit/test_llamacpp_config.py)."""
    from hoprag_cli import main

    index_dir, _, questions = gemma_index
    argv = ["ask", "--index", str(index_dir), "--json", "--set", "llm.backend=embedded"]
    assert main([*argv, questions[0]["question"]]) == 0
    out = json.loads(capsys.readouterr().out)
    # plan, step answer (a one-step plan answers with it), updates or a final answer otherwise
    assert out["answer"] and out["steps"] and out["llm_calls"] >= 2
    assert out["prompt_tokens"] > 100 and out["calls_by_purpose"]["plan"] == 1
    assert any(c["triples"] for step in out["steps"] for c in step["clues"])  # the KG was searched
    assert isinstance(out["documents"], list)
