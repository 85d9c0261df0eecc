"""``hoprag distill`` for real on CPU: the reference extractor as teacher (Ray Data, cached), a tiny
Gemma-shaped base model (the packaged tokenizer, random weights), real peft LoRA under Ray Train;
a worker killed after the first checkpoint is replaced and training resumes from it (then goes on
with two data-parallel workers); the exported adapter loads in the embedded backend and changes
its output."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

import pytest

from distillation.config import DistillConfig
from distillation.job import run_distillation
from hoprag.ray_runtime import RayConfig
from tests.support.local_ray import SAMPLE, own_ray_train_workers

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory) -> Path:
    """A 2-layer Gemma 3 with the packaged tokenizer (17M parameters, most in the embeddings)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from hoprag.llm.embedded import ensure_converted_checkpoint

    source = ensure_converted_checkpoint()
    config = AutoConfig.from_pretrained(source)
    config.update(
        {
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "head_dim": 32,
            "layer_types": list(config.layer_types[:2]),
        }
    )
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("tiny-gemma")
    AutoModelForCausalLM.from_config(config).save_pretrained(out)
    AutoTokenizer.from_pretrained(source).save_pretrained(out)
    return out


def _config(tiny_base: Path, address: str, steps: int, workers: int = 1) -> DistillConfig:
    return DistillConfig.model_validate(
        {
            "teacher": {"backend": "reference", "reference": {"world": str(SAMPLE / "raw" / "world.json")}},
            "max_documents": 8,
            "max_questions": 10,
            "held_out_fraction": 0.2,
            "base": {"model_path": str(tiny_base)},
            "lora": {"r": 4, "alpha": 16},
            "optim": {"max_steps": steps, "batch_size": 2, "learning_rate": 0.01},
            "run": {"num_workers": workers, "checkpoint_every": 2, "cpus_per_worker": 1},
            "ray": RayConfig(address=address).model_dump(),
        }
    )


def _film_items(count: int) -> list[dict]:
    """A 2WikiMultihopQA file's items: question i asks who directed Film i, one paragraph each."""
    return [
        {
            "_id": f"q{i}",
            "question": f"Who directed Film {i}?",
            "answer": f"Person {i}",
            "type": "compositional",
            "context": [[f"Film {i}", [f"Film {i} is a 1990 drama film directed by Person {i}."]]],
            "supporting_facts": [[f"Film {i}", 0]],
            "evidences": [[f"Film {i}", "director", f"Person {i}"]],
        }
        for i in range(count)
    ]


def _kill_the_worker_after_first_checkpoint(run_dir: Path, killed: list[int], stop: threading.Event) -> None:
    """SIGKILL the Ray Train worker once Ray Train has registered a checkpoint (its manager's
    snapshot lists one: files alone may belong to a report the controller has not taken yet)."""
    snapshot = run_dir / "ray" / "distill" / "checkpoint_manager_snapshot.json"
    while not stop.is_set():
        try:
            registered = json.loads(snapshot.read_text()).get("checkpoint_results")
        except (OSError, ValueError):
            registered = None
        if registered:
            for proc in own_ray_train_workers():
                proc.send_signal(signal.SIGKILL)
                killed.append(proc.pid)
                return
        time.sleep(0.05)


def test_distill_survives_a_killed_worker_and_the_adapter_changes_the_embedded_model(
    tmp_path, tiny_base, ray_cluster
) -> None:
    from hoprag.extraction.prompts import openie_prompt
    from hoprag.llm.embedded import EmbeddedLLM, EmbeddedLLMConfig
    from indexing.formats.reader import read_published

    run = tmp_path / "run"
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_the_worker_after_first_checkpoint, args=(run, killed, stop))
    killer.start()
    try:
        summary = run_distillation(SAMPLE, run, _config(tiny_base, ray_cluster, 8))
    finally:
        stop.set()
        killer.join(timeout=5)
    assert killed, "no worker was killed: the run ended before its first checkpoint"
    student = json.loads((run / "adapter" / "student.json").read_text())
    attempts = [json.loads(line) for line in (run / "attempts.jsonl").read_text().splitlines()]
    assert attempts[0]["resumed_from_step"] == 0 and attempts[1]["resumed_from_step"] >= 2  # resumed
    assert student["metrics"]["resumed_from_step"] == attempts[-1]["resumed_from_step"]
    assert student["steps"] == 8 and student["tasks"] == ["openie", "ner"]
    assert student["teacher"] == "reference:sample/world.json"
    # the first 8 documents, less those a test question needs (test text never teaches)
    sample = read_published(SAMPLE)
    needed = {t for q in sample.questions["test"] for t in q["supporting_facts"]}
    taught = [d for d in sample.documents[:8] if d.title not in needed]
    assert 0 < len(taught) < 8
    assert summary["teacher"]["passages"] == len(taught) and summary["teacher"]["questions"] == 10
    asked = len(taught) + 10  # one OpenIE row per passage, one NER row per training question
    assert summary["teacher"]["asked_now"] == asked and summary["teacher"]["failed"] == 0
    assert sum(student["examples"].values()) == asked

    base = EmbeddedLLM(EmbeddedLLMConfig(model_path=str(tiny_base), dtype="float32"))
    distilled = EmbeddedLLM(
        EmbeddedLLMConfig(model_path=str(tiny_base), dtype="float32", adapter=str(run / "adapter"))
    )
    assert distilled.student_tasks == {"openie", "ner"} and distilled.model_id != base.model_id
    spec = openie_prompt("Juno Halleck was born in Quifen.", "completion", student=True)
    assert (
        base.generate([spec.prompt], spec.params)[0].text
        != distilled.generate([spec.prompt], spec.params)[0].text
    )

    # The same command again, on two data-parallel workers (DDP over gloo, each step's batch dealt
    # out between them): the teacher's answers come from the cache, training from the one-worker
    # checkpoint.
    again = run_distillation(SAMPLE, run, _config(tiny_base, ray_cluster, 10, workers=2))
    assert again["teacher"]["asked_now"] == 0 and again["teacher"]["from_cache"] == asked
    assert again["student"]["metrics"]["resumed_from_step"] == 8 and again["student"]["steps"] == 10
    assert len((run / "attempts.jsonl").read_text().splitlines()) == len(attempts) + 1


def test_planner_tasks_are_taught_from_gold_plans_without_asking_the_teacher(
    tmp_path, tiny_base, ray_cluster
) -> None:
    """``plan`` and ``update`` alone: every example comes from the sample's gold plans (the teacher
    LLM is never asked), student.json records the planner prompts, and the planner's student plan
    prompt goes through the adapter."""
    from hoprag.llm.embedded import EmbeddedLLM, EmbeddedLLMConfig
    from hoprag.planner.prompts import PLANNER_PROMPT_VERSION, plan_prompt

    config = _config(tiny_base, ray_cluster, 4).model_copy(update={"tasks": ["plan", "update"]})
    summary = run_distillation(SAMPLE, tmp_path / "run", config)
    teacher, student = summary["teacher"], summary["student"]
    assert teacher["asked_now"] == 0 and teacher["passages"] == 0 and teacher["plans"] == 10
    assert (
        student["tasks"] == ["plan", "update"]
        and student["prompt_versions"]["planner"] == PLANNER_PROMPT_VERSION
    )
    plans = student["examples"]["train"] + student["examples"]["held_out"]
    assert plans > 20  # one plan and at least one update per question
    distilled = EmbeddedLLM(
        EmbeddedLLMConfig(model_path=str(tiny_base), dtype="float32", adapter=summary["adapter"])
    )
    base = EmbeddedLLM(EmbeddedLLMConfig(model_path=str(tiny_base), dtype="float32"))
    assert distilled.student_tasks == {"plan", "update"}
    spec = plan_prompt("Which film did Wike Micluther write?", "completion", student=True)
    assert (
        base.generate([spec.prompt], spec.params)[0].text
        != distilled.generate([spec.prompt], spec.params)[0].text
    )


def test_gold_facts_of_real_training_questions_teach_and_init_adapter_is_where_training_starts(
    tmp_path, tiny_base, ray_cluster, rule_server
) -> None:
    """A 2WikiMultihopQA file as a gold source: its training questions' paragraphs become openie
    examples whose targets hold the gold facts (the teacher, the rule-based LLM over HTTP, links
    each pair with the sentence's words, "is a 1990 drama film directed by"; the gold relation
    replaces them), a test
    question's paragraph never appears, and a run with ``init_adapter`` starts from that adapter's
    weights (with a learning rate too small to move them, they come out as they went in)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from indexing.formats.reader import train_test_split

    items = _film_items(8)
    source = tmp_path / "dev.json"
    source.write_text(json.dumps(items))
    split = train_test_split([{"id": item["_id"]} for item in items], 0.5)
    train = sorted(int(q["id"][1:]) for q in split["train"])
    assert 0 < len(train) < len(items)

    torch.manual_seed(1)
    start = get_peft_model(
        AutoModelForCausalLM.from_pretrained(tiny_base),
        LoraConfig(
            r=4,
            lora_alpha=16,
            target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
            init_lora_weights=False,
        ),
    )
    start.save_pretrained(tmp_path / "start")

    base = _config(tiny_base, ray_cluster, 1)
    config = DistillConfig.model_validate(
        {
            **base.model_dump(),
            "tasks": ["openie"],
            "max_documents": 2,
            "held_out_fraction": 0.0,
            "init_adapter": str(tmp_path / "start"),
            "gold": {
                "sources": [{"path": str(source), "format": "2wikimultihopqa"}],
                "repeat": 2,
                "teacher": {
                    "backend": "openai",
                    "openai": {
                        "base_url": rule_server.base_url,
                        "model": "rule",
                        "prompt_style": "completion",
                    },
                },
            },
            "optim": {**base.optim.model_dump(), "learning_rate": 1e-12, "warmup_steps": 0},
        }
    )
    summary = run_distillation(SAMPLE, tmp_path / "run", config)
    gold = summary["gold"]
    assert gold["train_questions"] == len(train) and gold["facts_taught"] == len(train)
    assert gold["relabelled"] == len(train) and gold["teacher_failed"] == 0
    rows = [json.loads(line) for line in (tmp_path / "run" / "data" / "train.jsonl").read_text().splitlines()]
    real = [r for r in rows if "directed by Person" in r["prompt"]]
    assert len(real) == 2 * len(train)  # each training paragraph, repeated twice
    assert {r["target"] for r in real} == {f"(Film {i} | director | Person {i})\n\n" for i in train}
    assert not any(f"Film {i} is" in r["prompt"] for r in rows for i in set(range(8)) - set(train))

    before = load_file(str(tmp_path / "start" / "adapter_model.safetensors"))
    after = load_file(str(tmp_path / "run" / "adapter" / "adapter_model.safetensors"))
    assert before.keys() == after.keys()
    assert all(torch.allclose(before[k], after[k], atol=1e-6) for k in before)
    assert any(k.endswith("lora_B.weight") and before[k].abs().sum() > 0 for k in before)  # not a fresh one


def test_teacher_only_runs_keep_the_teachers_answers_in_the_teacher_set(
    tmp_path, ray_cluster, tiny_base
) -> None:
    """``--teacher-only`` with ``teacher_set``: the first run asks the teacher and writes the set;
    a new run directory (the next session's) is answered from the set alone, trains nothing."""
    teacher_set = tmp_path / "teacher" / "reference-sample.parquet"
    config = _config(tiny_base, ray_cluster, 2).model_copy(update={"teacher_set": teacher_set})
    first = run_distillation(SAMPLE, tmp_path / "session-1", config, teacher_only=True)
    assert first["teacher"]["asked_now"] == 18 and first["teacher"]["from_cache"] == 0
    assert not (tmp_path / "session-1" / "adapter").exists()
    provenance = json.loads(teacher_set.with_suffix(".provenance.json").read_text())
    assert provenance["records"] == 18 and len(provenance["by_teacher"]) == 1
    second = run_distillation(SAMPLE, tmp_path / "session-2", config, teacher_only=True)
    assert second["teacher"]["asked_now"] == 0 and second["teacher"]["from_cache"] == 18


def test_a_published_benchmark_file_is_labelled_whole_and_teaches_nothing_it_tests(
    tmp_path, ray_cluster, tiny_base, rule_server
) -> None:
    """``--corpus`` a published file (2WikiMultihopQA's format), read as ``hoprag index`` reads it:
    every paragraph is labelled by a ``--teacher-only`` run; its questions are all test questions
    (no split), so a training run finds no paragraph it may teach and says so."""
    items = _film_items(5)
    source = tmp_path / "dev.json"
    source.write_text(json.dumps(items))
    teacher = {
        "backend": "openai",
        "openai": {"base_url": rule_server.base_url, "model": "rule", "prompt_style": "completion"},
    }
    config = DistillConfig.model_validate(
        {**_config(tiny_base, ray_cluster, 2).model_dump(), "teacher": teacher, "max_documents": None}
    )
    labelled = run_distillation(source, tmp_path / "label", config, teacher_only=True)
    assert labelled["teacher"]["asked_now"] == 5
    with pytest.raises(ValueError, match="no training examples"):
        run_distillation(source, tmp_path / "train", config)
