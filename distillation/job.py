"""``hoprag distill``: teacher outputs (Ray Data, cached) → student examples → a LoRA adapter
trained by a Ray Train ``TorchTrainer`` → ``RUN_DIR/adapter`` with its ``student.json``.

Fault tolerance as in GLM training: ``FailureConfig(max_failures)`` restarts the workers from the
latest checkpoint; re-running the same command (same ``--out``) reuses the teacher's cached
answers and resumes training from its latest checkpoint.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from distillation.config import DistillConfig
from distillation.examples import StudentExample, data_hash, split_held_out
from distillation.loop import distill_loop_per_worker

RUN_NAME = "distill"


def run_distillation(
    corpus: Path, out: Path, config: DistillConfig, teacher_only: bool = False
) -> dict[str, Any]:
    """Distil ``config.tasks`` from the teacher into ``out/adapter``; returns the run's summary.
    ``teacher_only``: stop after the teacher stage (its answers cached, and merged into
    ``config.teacher_set`` when set), the summary holding the teacher's and the gold reports only."""
    from ray.train.torch import TorchTrainer

    from distillation.held_out import teachable_documents
    from hoprag.config import dump_config
    from hoprag.extraction.prompts import PROMPT_VERSION, STUDENT_PROMPT_VERSION
    from hoprag.planner.prompts import PLANNER_PROMPT_VERSION
    from hoprag.ray_runtime import init_ray
    from indexing.formats.reader import read_published
    from training.trainer import fit_with_progress, trainer_options

    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    (out / "distill_config.yaml").write_text(dump_config(config))
    # hoprag index's reader: a generated or GFM-RAG corpus, or a published benchmark file (its
    # questions all test: their paragraphs label, never teach)
    source = read_published(corpus)
    documents = source.documents[: config.max_documents]
    read = len(documents)
    if not teacher_only:  # labelling may cover held-out paragraphs; teaching from them may not
        documents = teachable_documents(documents, config.held_out_titles, source.questions.get("test", []))
    # Training questions only: a corpus's test split stays unseen by the student.
    questions = [q for split in sorted(source.questions) if split != "test" for q in source.questions[split]]
    questions = questions[: config.max_questions]
    init_ray(config.ray)
    from distillation.gold import gold_examples
    from distillation.teacher import teacher_examples
    from distillation.teacher_set import export_teacher_set, seed_teacher_cache

    if config.teacher_set is not None:
        seed_teacher_cache(out, config.teacher_set)
    try:
        examples, teacher = teacher_examples(documents, questions, config, out)
        real, gold = gold_examples(config, out)
    finally:  # what the teacher answered is kept even when the stage stops part-way
        if config.teacher_set is not None:
            export_teacher_set(out, config.teacher_set)
    if teacher_only:
        summary = {
            "teacher": teacher.to_dict(),
            "gold": gold.to_dict(),
            "teacher_set": str(config.teacher_set),
        }
        (out / "teacher_summary.json").write_text(json.dumps(summary, indent=1))
        return summary
    train, held_out = split_held_out(examples, config.held_out_fraction)
    real_train, real_held_out = split_held_out(real, config.held_out_fraction)
    train += real_train * config.gold.repeat
    held_out += real_held_out
    examples += real
    if not train:
        raise ValueError(
            f"no training examples: the teacher answered none of {len(examples)} inputs usefully "
            f"({read - len(documents)} of the corpus's {read} documents withheld: held_out_titles, "
            "or paragraphs its test questions need)"
        )
    data = out / "data"
    data.mkdir(exist_ok=True)
    for name, rows in (("train", train), ("held_out", held_out)):
        _write_examples(data / f"{name}.jsonl", rows)
    trainer = TorchTrainer(
        distill_loop_per_worker,
        train_loop_config={
            "config": config.model_dump(mode="json"),
            "data": str(data),
            "out": str(out),
            "init_adapter": _init_adapter(config),
        },
        **trainer_options(config.run, RUN_NAME, out),
    )
    result = fit_with_progress(trainer, out, "distillation")
    held = json.loads((out / "held_out_metrics.json").read_text())
    tokens = {task: _prompt_chars([e for e in examples if e.task == task]) for task in config.tasks}
    student = {
        "base_model": config.base.model_path or "packaged:gemma-3-270m",
        "tasks": list(config.tasks),
        "prompt_versions": {
            "student": STUDENT_PROMPT_VERSION,
            "teacher": PROMPT_VERSION,
            "planner": PLANNER_PROMPT_VERSION,
        },
        "teacher": teacher.teacher,
        "data_hash": data_hash(examples),
        "examples": {"train": len(train), "held_out": len(held_out)},
        "lora": config.lora.model_dump(mode="json"),
        "steps": int((result.metrics or {}).get("step", config.optim.max_steps)),
        "metrics": held,
        "student_prompt_chars": tokens,
        "config": config.model_dump(mode="json"),
        "corpus": corpus_provenance(Path(corpus)),
        "gold_sources": gold.sources,
    }
    (out / "adapter" / "student.json").write_text(json.dumps(student, indent=1))
    summary = {
        "teacher": teacher.to_dict(),
        "gold": gold.to_dict(),
        "student": student,
        "adapter": str(out / "adapter"),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def _init_adapter(config: DistillConfig) -> str | None:
    """``config.init_adapter`` as an absolute directory (workers run elsewhere), checked here so a
    wrong path fails before the teacher runs."""
    from hoprag.llm.adapters import adapter_paths

    if not config.init_adapter:
        return None
    found = adapter_paths(config.init_adapter, packaged_fits=config.base.model_path is None)
    if not found:
        raise ValueError(
            f"init_adapter {config.init_adapter!r}: the packaged student fits the packaged base only"
        )
    weights = found[0].resolve() / "adapter_model.safetensors"
    if not weights.is_file():
        raise ValueError(f"init_adapter {config.init_adapter!r}: no {weights}")
    return str(weights.parent)


def corpus_provenance(corpus: Path) -> dict[str, Any]:
    """What the student was trained on: the corpus's name and, for a generated corpus, the generator
    config that reproduces it (``raw/world.json``'s ``config``)."""
    world = corpus / "raw" / "world.json"
    generator = json.loads(world.read_text()).get("config") if world.is_file() else None
    return {"name": corpus.name, "generator": generator}


def _write_examples(path: Path, rows: list[StudentExample]) -> None:
    path.write_text("".join(json.dumps(e.__dict__) + "\n" for e in rows))


def _prompt_chars(examples: list[StudentExample]) -> float:
    """Mean student-prompt length in characters (the few-shot prompts are several times longer)."""
    return round(sum(len(e.prompt) for e in examples) / len(examples), 1) if examples else 0.0
