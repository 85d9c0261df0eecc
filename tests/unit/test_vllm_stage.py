"""The ray.data.llm (vLLM) indexing path: its pure parts, checked against the actor path on CPU.

The processor itself needs GPUs; here its output rows are produced by the rule-based LLM from the
exact prompts the preprocess step builds, in shuffled order, and must fold into the same records
the in-actor path produces.
"""

from __future__ import annotations

import json
import random

from hoprag.llm.base import TASK_NER, TASK_OPENIE, GenerationParams
from hoprag.llm.vllm_config import ERROR_COLUMN, MAX_TOKENS_COLUMN, STOP_COLUMN
from indexing.config import ExtractionConfig
from indexing.extract import extract_documents
from indexing.vllm_stage import finalize, fold_result, make_preprocess, passage_rows, postprocess
from tests.support.scripted_llm import RuleBasedLLM

DOCS = [
    ("d1", "Mira Castell was born in Dornwick. Mira Castell starred in The Ember Road. " * 30),
    ("d2", ""),
    ("d3", "Tavin Orlo directed The Ember Road."),
]


def _simulate_processor(rows, style, config, llm):
    """What the vLLM processor would return: generated text for each preprocessed row."""
    pre = make_preprocess(style, config.max_new_tokens)
    out = []
    for row in rows:
        cols = pre(dict(row))
        prompt = cols.get("prompt") or cols["messages"]
        (c,) = llm.generate([prompt], GenerationParams(stop=tuple(json.loads(cols[STOP_COLUMN]))))
        out.append(
            postprocess(
                {**row, **cols, "generated_text": c.text, "num_input_tokens": 10, "num_generated_tokens": 5}
            )
        )
    return out


def test_passage_rows_split_documents_and_keep_questions():
    cfg = ExtractionConfig(max_chunk_chars=400)
    pending = [(TASK_OPENIE, k, t) for k, t in DOCS] + [(TASK_NER, "q1", "Who directed The Ember Road?")]
    rows, assembler = passage_rows(pending, cfg, "vllm:m")
    assert len([r for r in rows if r["doc_key"] == "d1"]) > 3
    assert [r["task"] for r in rows if r["doc_key"] == "q1"] == [TASK_NER]
    assert [r.status for r in assembler.ready()] == ["empty_document"]
    assert len({r["doc_id"] for r in rows}) == len(rows)


def test_preprocess_builds_prompts_per_task_and_style():
    pre = make_preprocess("completion", 128)
    cols = pre({"task": TASK_OPENIE, "text": "Mira Castell was born in Dornwick."})
    assert cols["prompt"].endswith("Triples:\n") and cols[MAX_TOKENS_COLUMN] == 128
    assert cols["sampling_params"]["max_tokens"] == 128
    chat = make_preprocess("chat", 128)({"task": TASK_NER, "text": "Who directed The Ember Road?"})
    assert chat["messages"][-1] == {"role": "user", "content": "Who directed The Ember Road?"}


def test_out_of_order_passages_fold_into_the_same_records_as_the_actor_path():
    cfg = ExtractionConfig(max_chunk_chars=400)
    llm = RuleBasedLLM()
    pending = [(TASK_OPENIE, k, t) for k, t in DOCS] + [(TASK_NER, "q1", "Who directed The Ember Road?")]
    rows, assembler = passage_rows(pending, cfg, llm.model_id)
    results = _simulate_processor(rows, "completion", cfg, llm)
    random.Random(0).shuffle(results)
    finished = {r.doc_key: r for r in assembler.ready()}
    for row in results:
        rec = fold_result(row, assembler, "completion", llm.model_id)
        if rec is not None:
            assert rec.doc_key not in finished, "a document finished twice"
            finished[rec.doc_key] = rec
    assert set(finished) == {"d1", "d2", "d3", "q1"}
    assert finished["q1"].entities == ["The Ember Road"]
    reference = {
        r.doc_key: r for r in extract_documents(llm, [k for k, _ in DOCS], [t for _, t in DOCS], cfg)
    }
    for key in ("d1", "d2", "d3"):
        assert finished[key].status == reference[key].status
        assert sorted(finished[key].triples) == sorted(reference[key].triples)
        assert finished[key].llm_calls == reference[key].llm_calls


def test_failed_rows_become_llm_errors_and_are_retried_later():
    cfg = ExtractionConfig()
    rows, assembler = passage_rows([(TASK_OPENIE, "d3", DOCS[2][1])], cfg, "vllm:m")
    failed = finalize({**rows[0], ERROR_COLUMN: "CUDA out of memory", "generated_text": None})
    assert failed["error"].startswith("vllm_error")
    rec = fold_result(failed, assembler, "completion", "vllm:m")
    assert rec is not None and rec.status == "llm_error"


def test_a_student_adapter_gets_student_prompts_and_folds_like_the_actor_path():
    """Chat style with a student of both tasks: plain student prompts (no chat-template stage),
    parsed with the student prompts' output format, same records as the few-shot path."""
    cfg = ExtractionConfig(max_chunk_chars=400)
    llm = RuleBasedLLM()
    students = frozenset({TASK_OPENIE, TASK_NER})
    pending = [(TASK_OPENIE, k, t) for k, t in DOCS] + [(TASK_NER, "q1", "Who directed The Ember Road?")]
    rows, assembler = passage_rows(pending, cfg, "vllm:m+adapter:abc")
    pre = make_preprocess("chat", cfg.max_new_tokens, students, chat_template=False)
    finished = {r.doc_key: r for r in assembler.ready()}
    for row in rows:
        cols = pre(dict(row))
        assert (
            "messages" not in cols
            and cols["prompt"].count("Passage:" if row["task"] == TASK_OPENIE else "Question:") == 1
        )  # the short student prompt, no examples
        (c,) = llm.generate([cols["prompt"]], GenerationParams(stop=tuple(json.loads(cols[STOP_COLUMN]))))
        out = postprocess({**row, **cols, "generated_text": c.text, "num_generated_tokens": 5})
        rec = fold_result(out, assembler, "chat", "vllm:m+adapter:abc", students)
        if rec is not None:
            finished[rec.doc_key] = rec
    assert set(finished) == {"d1", "d2", "d3", "q1"}
    assert finished["q1"].entities == ["The Ember Road"]
    reference = {
        r.doc_key: r for r in extract_documents(llm, [k for k, _ in DOCS], [t for _, t in DOCS], cfg)
    }
    for key in ("d1", "d3"):
        assert finished[key].status == "ok"
        assert sorted(finished[key].triples) == sorted(reference[key].triples)


def test_a_partial_student_flattens_the_other_tasks_chat_prompts():
    pre = make_preprocess("chat", 128, frozenset({TASK_OPENIE}), chat_template=False)
    openie = pre({"task": TASK_OPENIE, "text": "Mira Castell was born in Dornwick."})
    ner = pre({"task": TASK_NER, "text": "Who directed The Ember Road?"})
    assert openie["prompt"].count("Passage:") == 1
    assert "messages" not in ner and ner["prompt"].endswith("Assistant:")  # few-shot chat, flattened
