"""Student training examples from teacher outputs: targets the parsers read back exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from distillation.config import AnswerTaskSettings, DistillConfig
from distillation.examples import (
    ContextDocument,
    answer_example,
    data_hash,
    ner_example,
    openie_example,
    split_held_out,
    teacher_passages,
)
from hoprag.extraction.parsing import parse_entity_list, parse_openie_output
from hoprag.llm.base import truncate_at_stop
from hoprag.planner.prompts import answer_prompt
from indexing.config import ExtractionConfig
from indexing.extract import ExtractionRecord
from tests.support.tiny_gemma import tiny_gemma

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


def _layer_of(parameter_or_module_name: str) -> int:
    """The transformer layer index in a name like ``base_model.model.model.layers.2.mlp``."""
    return int(parameter_or_module_name.split(".layers.")[1].split(".")[0])


def test_the_target_only_loss_equals_the_full_logits_loss() -> None:
    """``target_loss`` skips the prompt's logits; it must give the loss HF computes from all of them."""
    import torch

    from distillation.loop import target_loss

    model = tiny_gemma(2).eval()
    ids = torch.randint(1, 97, (3, 12))
    mask = torch.ones_like(ids)
    mask[2, 9:] = 0  # right padding
    labels = torch.full_like(ids, -100)
    labels[0, 5:] = ids[0, 5:]  # targets start at different positions per row
    labels[1, 8:] = ids[1, 8:]
    labels[2, 6:9] = ids[2, 6:9]
    batch = {"input_ids": ids, "attention_mask": mask, "labels": labels}
    with torch.no_grad():
        reference = model(**batch).loss
        ours = target_loss(model, batch)
    assert torch.allclose(ours, reference, atol=1e-5)


def test_lora_layers_adapt_only_those_layers_and_leave_the_rest_without_gradient_work() -> None:
    """``lora.layers``: adapters in the listed layers only; a backward pass reaches no layer below them
    (why it is faster), and the default adapts every layer."""
    import torch

    from distillation.config import LoraSettings
    from distillation.loop import target_loss, with_lora

    def adapted_layers(model: torch.nn.Module) -> set[int]:
        return {_layer_of(n) for n, _ in model.named_parameters() if "lora_" in n}

    assert adapted_layers(with_lora(tiny_gemma(3), LoraSettings(r=2))) == {0, 1, 2}
    model = with_lora(tiny_gemma(3), LoraSettings(r=2, layers=[2, 1]))
    assert adapted_layers(model) == {1, 2}
    reached: list[str] = []
    for name, module in model.named_modules():
        if name.endswith("mlp"):
            module.register_full_backward_hook(lambda m, gi, go, name=name: reached.append(name))
    ids = torch.randint(1, 97, (2, 10))
    labels = ids.clone()
    labels[:, :5] = -100
    target_loss(
        model, {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}
    ).backward()
    assert sorted(_layer_of(n) for n in reached) == [1, 2]
    assert all(p.grad is not None for n, p in model.named_parameters() if "lora_B" in n)
    with pytest.raises(ValueError, match="distinct layer indices"):
        LoraSettings(layers=[1, 1])
    with pytest.raises(ValueError, match="distinct layer indices"):
        LoraSettings(layers=[])


def _doc(title: str, *triples: tuple[str, str, str]) -> ContextDocument:
    text = " ".join(f"{h} {r} {t}." for h, r, t in triples)
    return ContextDocument(title, text, tuple(triples))


CHAIN = [
    _doc("Doquis Air", ("Doquis Air", "manufactured by", "Jodind Labs")),
    _doc("Jodind Labs", ("Jodind Labs", "founded by", "Joke Zathell")),
    _doc("Joke Zathell", ("Joke Zathell", "born in", "Drevustad")),
]
NOISE = [_doc("Fora Textiles", ("Fora Textiles", "ceo", "Brotra Radrorting")), _doc("Quoroholm", ("Quoroholm", "city in", "Civaland"))]  # fmt: skip
QUESTION = "Where was the founder of the manufacturer of Doquis Air born?"


def test_an_answer_example_holds_the_whole_chain_and_is_the_retrieve_prompt() -> None:
    settings = AnswerTaskSettings(unknown_fraction=0.0, context_documents=2, max_facts=4)
    example = answer_example("k1", QUESTION, "Drevustad", CHAIN, NOISE, settings)
    assert example.task == "answer" and example.target == " Drevustad\n"
    facts = [line[2:] for line in example.prompt.splitlines() if line.startswith("- ")]
    assert len(facts) == 4  # max_facts: the chain's 3 come first, one distractor fills the rest
    for doc in CHAIN:
        assert " | ".join(doc.triples[0]) in facts
    shown = [line for line in example.prompt.splitlines() if line.startswith("Document: ")]
    assert 1 <= sum(line.startswith(f"Document: {d.title}:") for d in CHAIN for line in shown) <= 2
    assert len(shown) == 2
    # The same prompt as retrieve mode's student answer prompt with these facts and documents.
    texts = [line.removeprefix("Document: ") for line in shown]
    assert example.prompt == answer_prompt(QUESTION, facts, "completion", texts, student=True).prompt
    # Seeded by the key: the same question gets the same example.
    assert answer_example("k1", QUESTION, "Drevustad", CHAIN, NOISE, settings) == example


def test_an_unanswerable_example_shows_only_distractors_and_answers_unknown() -> None:
    settings = AnswerTaskSettings(unknown_fraction=0.999)
    example = answer_example("k2", QUESTION, "Drevustad", CHAIN, NOISE, settings)
    assert example.target == " unknown\n"
    assert "Drevustad" not in example.prompt and "Fora Textiles" in example.prompt
    with_no_distractors = answer_example("k2", QUESTION, "Drevustad", CHAIN, [], settings)
    assert with_no_distractors.target == " Drevustad\n"  # nothing to show instead: stays answerable


def test_batches_cover_each_epoch_once_and_group_similar_lengths() -> None:
    from distillation.loop import GROUP_BATCHES, _batch

    shard = [{"prompt": "x" * (10 if i % 2 else 500), "target": str(i)} for i in range(64)]
    size = 4
    per_epoch = len(shard) // size
    for epoch in range(2):
        seen = [
            ex["target"]
            for step in range(per_epoch)
            for ex in _batch(shard, epoch * per_epoch + step, size, 3)
        ]
        assert sorted(seen) == sorted(ex["target"] for ex in shard)
    lengths = [{len(ex["prompt"]) for ex in _batch(shard, step, size, 3)} for step in range(per_epoch)]
    mixed = sum(len(batch) > 1 for batch in lengths)
    assert mixed <= len(shard) // (size * GROUP_BATCHES)  # at most one boundary batch per group
    assert _batch(shard, 5, size, 3) == _batch(shard, 5, size, 3)  # resumable: a function of the step


def test_the_learning_rate_warms_up_then_decays_to_a_tenth() -> None:
    from distillation.loop import learning_rate

    config = DistillConfig.model_validate(
        {"optim": {"max_steps": 100, "warmup_steps": 10, "learning_rate": 1.0}}
    )
    assert learning_rate(config, 0) == pytest.approx(0.1)
    assert learning_rate(config, 9) == pytest.approx(1.0)
    assert learning_rate(config, 10) == pytest.approx(1.0)
    assert learning_rate(config, 100) == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("precision", "use_gpu", "native_bf16", "runs", "warns"),
    [
        ("auto", False, False, "fp32", False),  # an AVX2-only CPU: bf16 would take minutes a step
        ("auto", False, True, "bf16", False),  # AVX512-BF16 / AMX
        ("auto", True, False, "bf16", False),  # a GPU decides, not the host CPU
        ("bf16", False, False, "bf16", True),  # asked for: kept, with a warning naming the fix
        ("bf16", False, True, "bf16", False),
        ("fp32", False, True, "fp32", False),
    ],
)
def test_the_training_precision_follows_the_device(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    precision: str,
    use_gpu: bool,
    native_bf16: bool,
    runs: str,
    warns: bool,
) -> None:
    import torch

    import hoprag.machine
    from distillation.loop import _autocast_dtype, training_precision

    monkeypatch.setattr(hoprag.machine, "cpu_has_native_bf16", lambda: native_bf16)
    config = DistillConfig.model_validate({"optim": {"precision": precision}, "run": {"use_gpu": use_gpu}})
    assert training_precision(config) == runs
    assert ("optim.precision=fp32" in caplog.text) == warns
    assert _autocast_dtype(config) == (torch.bfloat16 if runs == "bf16" else None)


def test_distractor_pool_view_draws_what_the_filtered_list_draws() -> None:
    import random

    from distillation.teacher import WithoutPositions
    from indexing.corpus import Document

    documents = [Document(title=f"d{i}", text=f"text {i}") for i in range(40)]
    for excluded in ([], [0], [39], [3, 4, 17], [17, 3]):
        view = WithoutPositions(documents, excluded)
        filtered = [d for i, d in enumerate(documents) if i not in excluded]
        assert len(view) == len(filtered) and list(view) == filtered
        for seed in range(5):
            assert random.Random(seed).sample(view, 3) == random.Random(seed).sample(filtered, 3)
    with pytest.raises(IndexError):
        WithoutPositions(documents, [1])[39]


def test_the_configs_task_names_are_the_ones_prompts_carry() -> None:
    """A student's tasks (student.json) route its prompts by name: the config's choices, the
    distillation tasks and the names the prompt builders put in GenerationParams.task are one set."""
    from typing import get_args

    from distillation.config import Task
    from distillation.examples import TASKS
    from hoprag.extraction.prompts import ner_prompt, openie_prompt
    from hoprag.llm.base import TASK_ANSWER, TASK_NER, TASK_OPENIE, TASK_PLAN, TASK_UPDATE
    from hoprag.planner.prompts import plan_prompt, update_prompt

    assert set(get_args(Task)) == set(TASKS) == {TASK_OPENIE, TASK_NER, TASK_ANSWER, TASK_PLAN, TASK_UPDATE}
    assert openie_prompt("p", "completion", student=True).params.task == TASK_OPENIE
    assert ner_prompt("q", "completion", student=True).params.task == TASK_NER
    assert answer_prompt("q", [], "completion", student=True).params.task == TASK_ANSWER
    for student in (True, False):
        assert plan_prompt("q", "completion", student=student).params.task == TASK_PLAN
        assert update_prompt("q", [], [], "completion", student=student).params.task == TASK_UPDATE


def test_the_workers_of_a_step_share_one_length_group_and_cover_the_epoch() -> None:
    """Two workers deal out one global batch per step: together they see what one worker with twice
    the batch sees, and each gets prompts of the same length class (no long/short wait at the
    all-reduce)."""
    from distillation.loop import _batch, worker_batch

    shard = [{"prompt": "x" * (10 if i % 2 else 500), "target": str(i)} for i in range(64)]
    size, world = 2, 2
    for step in range(len(shard) // (size * world)):
        parts = [worker_batch(shard, step, size, 3, rank, world) for rank in range(world)]
        assert all(len(part) == size for part in parts)
        assert sorted(ex["target"] for part in parts for ex in part) == sorted(
            ex["target"] for ex in _batch(shard, step, size * world, 3)
        )
    mixed = [
        step
        for step in range(len(shard) // (size * world))
        if {len(ex["prompt"]) for ex in worker_batch(shard, step, size, 3, 0, world)}
        != {len(ex["prompt"]) for ex in worker_batch(shard, step, size, 3, 1, world)}
    ]
    assert len(mixed) <= 2  # only the batch at a length boundary of a sorted group


def test_a_short_last_batch_still_gives_every_worker_an_example() -> None:
    from distillation.loop import _batch, worker_batch

    shard = [{"prompt": "p", "target": str(i)} for i in range(5)]  # 5 = one batch of 4 + one of 1
    last = [worker_batch(shard, step, 2, 0, rank, 2) for step in range(2) for rank in range(2)]
    assert all(last)
    (lone,) = [step for step in range(2) if len(_batch(shard, step, 4, 0)) == 1]
    dealt = [worker_batch(shard, lone, 2, 0, rank, 2) for rank in range(2)]
    assert dealt[0] == dealt[1] == _batch(shard, lone, 4, 0)  # the lone example, dealt to both


def test_one_worker_batches_as_before() -> None:
    from distillation.loop import _batch, worker_batch

    shard = [{"prompt": "x" * i, "target": str(i)} for i in range(40)]
    assert all(worker_batch(shard, step, 4, 7, 0, 1) == _batch(shard, step, 4, 7) for step in range(20))


def test_the_target_loss_is_the_models_own_loss_on_the_target_tokens() -> None:
    """The gathered loss (only target positions reach the output layer) equals transformers' own
    shifted cross-entropy over the unmasked labels: rows of different prompt and target lengths,
    right padding, with and without a LoRA adapter, and through the DDP-able loss module."""
    import torch
    from peft import LoraConfig, get_peft_model

    from distillation.loop import loss_module, target_loss

    model = tiny_gemma(2).eval()
    ids = torch.randint(3, 97, (3, 12))
    mask = torch.ones_like(ids)
    mask[1, 9:] = 0  # padding
    mask[2, 6:] = 0
    labels = torch.full_like(ids, -100)
    labels[0, 7:12] = ids[0, 7:12]  # prompt 7, target 5
    labels[1, 4:9] = ids[1, 4:9]  # prompt 4, target 5, then padding
    labels[2, 5:6] = ids[2, 5:6]  # prompt 5, target 1
    batch = {"input_ids": ids, "attention_mask": mask, "labels": labels}
    with torch.no_grad():
        expected = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        assert torch.allclose(target_loss(model, batch), expected, atol=1e-6)
        adapted = get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj"], init_lora_weights=False))
        expected = adapted(input_ids=ids, attention_mask=mask, labels=labels).loss
        assert torch.allclose(target_loss(adapted, batch), expected, atol=1e-6)
        assert torch.allclose(loss_module(adapted)(**batch), expected, atol=1e-6)
    loss = loss_module(adapted)(**batch)
    loss.backward()
    trained = [p for p in adapted.parameters() if p.requires_grad]
    assert trained and all(p.grad is not None and p.grad.abs().sum() > 0 for p in trained)


def test_a_bf16_copy_of_the_frozen_output_layer_leaves_the_bf16_loss_unchanged(tmp_path: Path) -> None:
    """``output_layer_in``: under bf16 autocast the frozen (tied) output layer was cast at every step;
    its own bf16 copy gives the same loss and gradients, keeps the input embedding's fp32 table, and
    the exported adapter still holds the LoRA weights only."""
    import torch
    from safetensors.torch import load_file

    from distillation.config import LoraSettings
    from distillation.loop import output_layer_in, target_loss, with_lora

    ids = torch.randint(3, 97, (2, 10))
    labels = torch.full_like(ids, -100)
    labels[:, 6:] = ids[:, 6:]
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}

    def loss_and_grads(cast: bool) -> tuple[torch.Tensor, list[torch.Tensor]]:
        base = tiny_gemma(2)
        model = with_lora(base, LoraSettings(r=2, dropout=0.0))
        if cast:
            output_layer_in(base, torch.bfloat16)
            assert base.get_output_embeddings().weight.dtype == torch.bfloat16
            assert base.get_input_embeddings().weight.dtype == torch.float32
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = target_loss(model, batch)
        loss.backward()
        if cast:
            model.save_pretrained(tmp_path)
        return loss.detach(), [p.grad for p in model.parameters() if p.requires_grad]

    (before, grads_before), (after, grads_after) = loss_and_grads(False), loss_and_grads(True)
    assert torch.equal(before, after)
    assert all(torch.equal(a, b) for a, b in zip(grads_before, grads_after, strict=True))
    saved = load_file(str(tmp_path / "adapter_model.safetensors"))
    assert saved and all("lora_" in name for name in saved)


# The PAI-2 paper's plan-enhancement case as a gold plan (the format `hoprag generate` writes).
PAYMENT = "Do both films Payment On Demand and My Cousin From Warsaw have directors from the same country?"
PAYMENT_PLAN = [
    {
        "step": "Who is the director of Payment On Demand?",
        "answer": "Curtis Bernhardt",
        "ref": "[director of Payment On Demand]",
    },
    {
        "step": "Who is the director of My Cousin From Warsaw?",
        "answer": "Carl Boese",
        "ref": "[director of My Cousin From Warsaw]",
    },
    {"step": "What country is [director of Payment On Demand] from?", "answer": "Germany", "ref": None},
    {"step": "What country is [director of My Cousin From Warsaw] from?", "answer": "Germany", "ref": None},
]


def test_gold_plans_are_read_from_question_records_and_malformed_ones_refused() -> None:
    from hoprag.planner.gold import GoldStep, gold_plan

    plan = gold_plan({"plan": PAYMENT_PLAN})
    assert plan is not None and plan[2] == GoldStep(PAYMENT_PLAN[2]["step"], "Germany")
    assert gold_plan({}) is None and gold_plan({"plan": []}) is None and gold_plan({"plan": "1. x"}) is None
    assert gold_plan({"plan": [{"step": "Who?", "answer": ""}]}) is None
    # a placeholder must name an earlier step's ref
    assert gold_plan({"plan": [PAYMENT_PLAN[2]]}) is None
    assert gold_plan({"plan": [{"step": "Who is it?\n2. More", "answer": "x"}]}) is None


def test_plan_and_update_targets_walk_the_gold_chain() -> None:
    from distillation.examples import plan_example, update_examples
    from hoprag.planner.gold import gold_plan
    from hoprag.planner.parsing import parse_steps, parse_update

    plan = gold_plan({"plan": PAYMENT_PLAN})
    assert plan is not None
    example = plan_example("k", PAYMENT, plan)
    assert example.task == "plan" and example.prompt.endswith(f"Question: {PAYMENT}\nSteps:\n")
    assert "Payment On Demand" not in example.prompt.split("Question:")[0]  # no worked examples
    assert parse_steps(truncate_at_stop(example.target, ("\n\n",))[0]).value == [s.step for s in plan]
    updates = update_examples("u", PAYMENT, "yes", plan)
    # after steps 1 and 2 (placeholders wait in the remaining steps), none after step 3, and the last
    assert [e.task for e in updates] == ["update"] * 3
    first, second, last = (parse_update(truncate_at_stop(e.target, ("\n\n",))[0]).value for e in updates)
    assert first is not None and first.remaining == [
        "Who is the director of My Cousin From Warsaw?",
        "What country is Curtis Bernhardt from?",
        "What country is [director of My Cousin From Warsaw] from?",
    ]
    assert second is not None and second.remaining == [
        "What country is Curtis Bernhardt from?",
        "What country is Carl Boese from?",
    ]
    assert last is not None and last.final_answer == "yes"
    # the findings shown are the steps as rewritten so far, with their gold answers
    assert "3. What country is Curtis Bernhardt from? -> Germany" in updates[2].prompt
    assert "Remaining:\n(none)" in updates[2].prompt
    # a needed step that found nothing: its placeholder becomes the plain description, still a question
    lost = update_examples("u", PAYMENT, "yes", plan, unknown_step=0)
    assert "1. Who is the director of Payment On Demand? -> unknown" in lost[0].prompt
    assert "3. What country is director of Payment On Demand from?" in lost[0].target
    assert lost[-1].target == "Final answer: yes\n\n" and len(lost) == 3


def test_the_planner_sends_a_plan_student_exactly_the_prompts_it_was_trained_on(film_kg) -> None:
    """A student that answers only its training prompts, exactly, drives the planner to the answer:
    the planner's student plan and update prompts are the distillation examples' prompts."""
    from distillation.examples import plan_example, update_examples
    from hoprag.llm.base import Completion, GenerationParams
    from hoprag.planner import Planner, PlannerConfig
    from hoprag.planner.gold import gold_plan
    from tests.support.planner_llm import Rule, ScriptedPlannerLLM

    plan = gold_plan({"plan": PAYMENT_PLAN})
    assert plan is not None
    taught = {
        e.prompt: e.target
        for e in [plan_example("k", PAYMENT, plan), *update_examples("u", PAYMENT, "yes", plan)]
    }
    answers = [Rule("answer", s["answer"], f"Question: {s['step']}") for s in PAYMENT_PLAN[:2]]
    answers += [
        Rule("answer", "Germany", "Question: What country is Curtis Bernhardt from?"),
        Rule("answer", "Germany", "Question: What country is Carl Boese from?"),
    ]

    class TaughtStudent(ScriptedPlannerLLM):
        student_tasks = frozenset({"plan", "update"})

        def generate(self, prompts, params: GenerationParams) -> list[Completion]:
            if params.task in self.student_tasks:
                self.prompts += [(str(params.task), p) for p in prompts]
                return [
                    Completion(text=truncate_at_stop(taught.get(p, "???"), params.stop)[0]) for p in prompts
                ]
            return super().generate(prompts, params)

    llm = TaughtStudent(answers)
    # the update prompts are what is checked here: substitution (which needs no update call) is off
    result = Planner(film_kg, llm, PlannerConfig(fill_placeholders=False)).answer(PAYMENT)
    assert [k for k in llm.kinds() if k in ("plan", "update")] == ["plan", "update", "update", "update"]
    assert all(p in taught for k, p in llm.prompts if k in ("plan", "update"))
    assert result.answer == "yes"
    assert [s.query for s in result.steps][2:] == [
        "What country is Curtis Bernhardt from?",
        "What country is Carl Boese from?",
    ]


def test_plan_and_update_examples_come_from_the_generators_gold_plans() -> None:
    from distillation.teacher import TeacherReport, plan_examples
    from synthetic import SAMPLE_CONFIG, generate

    questions = generate(SAMPLE_CONFIG).train
    config = DistillConfig(tasks=["plan", "update"])
    report = TeacherReport()
    examples = plan_examples([*questions, {"question": "Who?", "answer": "x"}], config, report)
    assert report.plans == len(questions) and report.plans_skipped == 1
    plans = [e for e in examples if e.task == "plan"]
    updates = [e for e in examples if e.task == "update"]
    assert len(plans) == len(questions)
    # every question ends with one final-answer update; chains add one per placeholder-waiting step
    finals = [e for e in updates if e.target.startswith("Final answer: ")]
    assert len(finals) == len(questions) < len(updates)
    lost = [e for e in updates if "-> unknown" in e.prompt]
    assert 0 < len({e.prompt.split("Found:")[0] for e in lost}) < len(questions) / 2  # ~20% of questions
    exact = DistillConfig(tasks=["update"], update={"unknown_fraction": 0.0})
    assert not [e for e in plan_examples(questions, exact, TeacherReport()) if "-> unknown" in e.prompt]
    only_plan = plan_examples(questions, DistillConfig(tasks=["plan"]), TeacherReport())
    assert {e.task for e in only_plan} == {"plan"}
    with pytest.raises(ValueError, match="gold search plan"):
        plan_examples([{"question": "Who?", "answer": "x"}], config, TeacherReport())
