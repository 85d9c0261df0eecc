"""The typed config of ``hoprag distill`` (a YAML recipe plus ``--set`` overrides)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from hoprag.config import StrictModel
from hoprag.llm.factory import LLMBackendConfig
from hoprag.ray_runtime import RayConfig
from indexing.config import ExtractionConfig
from indexing.formats.reader import CorpusFormat
from training.config import RunSettings

Task = Literal["openie", "ner", "answer", "plan", "update"]


class StudentBase(StrictModel):
    """The model the adapter is trained for (the embedded backend's base)."""

    model_path: str | None = Field(
        default=None, description="A local HF causal-LM directory; default: the packaged Gemma 3 270M."
    )


class LoraSettings(StrictModel):
    """The LoRA adapter (``peft``)."""

    r: int = Field(default=16, ge=1, description="Rank of the update matrices.")
    alpha: int = Field(default=32, ge=1, description="Scaling numerator (scale = alpha / r).")
    dropout: float = Field(default=0.05, ge=0, lt=1)
    target_modules: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"],
        min_length=1,
        description="Module names that get adapters (attention projections of Gemma/Llama-style models).",
    )
    layers: list[int] | None = Field(
        default=None,
        description="Transformer layer indices (0-based) whose target modules get adapters; null: all. "
        "Adapting only the upper layers lets the backward pass stop there: on 2 CPU cores, Gemma 3 "
        "270M's top 9 of 18 layers train 23% faster per step than all 18.",
    )

    @field_validator("layers")
    @classmethod
    def _layers_unique_and_non_negative(cls, layers: list[int] | None) -> list[int] | None:
        if layers is None:
            return None
        if not layers or any(i < 0 for i in layers) or len(set(layers)) != len(layers):
            raise ValueError("lora.layers: a non-empty list of distinct layer indices >= 0, or null for all")
        return sorted(layers)


class AnswerTaskSettings(StrictModel):
    """The ``answer`` task: the answer prompt of ``retrieve`` mode (also the planner's step answers),
    taught from the corpus's training questions and their gold answers. Each question's context is
    built the way retrieve mode builds it: document texts and fact triples (the teacher's triples of
    the documents), its supporting documents mixed with distractors."""

    context_documents: int = Field(
        default=3, ge=1, description="Document texts per prompt (retrieve.context_documents serves 3)."
    )
    max_document_chars: int = Field(default=600, ge=50, description="Each document text is cut to this.")
    max_facts: int = Field(default=25, ge=1, description="Fact triples per prompt (retrieve.max_triples).")
    distractor_documents: int = Field(
        default=2, ge=0, description="Random other documents whose texts and triples join the context."
    )
    unknown_fraction: float = Field(
        default=0.1,
        ge=0,
        lt=1,
        description="Share of questions shown only distractors, answered 'unknown' (the answer prompt's "
        "way of saying the context is not enough).",
    )


class UpdateTaskSettings(StrictModel):
    """The ``update`` task: the planner's plan-update prompt along each question's gold plan."""

    unknown_fraction: float = Field(
        default=0.2,
        ge=0,
        lt=1,
        description="Share of questions where one step that later steps need found nothing ('unknown'); "
        "the target then rewrites that step's placeholder as the plain description, a question that "
        "still names what to search for (a small model's steps often find nothing).",
    )


class HeldOutTitles(StrictModel):
    """Paragraph titles that never teach a student: the first ``first`` entries of a corpus file
    (a JSON list or JSONL of ``{"title", "text"}`` rows, HippoRAG 2's corpus format), e.g. the
    2Wiki corpus' first 3,000, where held-out questions are measured."""

    path: Path = Field(description="The corpus file whose leading titles are held out.")
    first: int = Field(ge=1, description="How many of its first entries are held out.")


class GoldSource(StrictModel):
    """One published benchmark file whose training questions' gold facts teach the student."""

    path: str = Field(description="A benchmark file or directory, as `hoprag index --corpus` takes it.")
    format: CorpusFormat = Field(default="auto", description="As `hoprag index --format`.")
    train_fraction: float = Field(
        default=0.5,
        gt=0,
        lt=1,
        description="Questions whose id hashes below this are training questions (the rest, and every "
        "paragraph they need, are never shown). Use the fraction the evaluation splits with.",
    )


class GoldCorrection(StrictModel):
    """Real paragraphs with the teacher's triples corrected by gold facts (distillation/gold.py)."""

    sources: list[GoldSource] = Field(
        default_factory=list, description="Benchmark files with gold facts; none: no real-prose examples."
    )
    teacher: LLMBackendConfig = Field(
        default_factory=lambda: LLMBackendConfig.model_validate({"backend": "embedded"}),
        description="Who extracts the paragraphs' triples before correction (default: the embedded "
        "default, the packaged student).",
    )
    extra_teachers: list[LLMBackendConfig] = Field(
        default_factory=list,
        description="A committee: each of these teachers' triples whose subject-object pair no earlier "
        "teacher's triple links is added to `teacher`'s before gold correction (where both link a pair, "
        '`teacher`\'s relation stands). Measured: docs/distillation.md, "The 1.5B as teacher".',
    )
    repeat: int = Field(
        default=1, ge=1, description="Each real-prose training example is seen this many times per epoch."
    )
    drop_unstated: bool = Field(
        default=False,
        description="Drop the teacher's triples whose relation the paragraph does not state in words "
        "(distillation/gold.py, step 3); measured worse: parenthetical dates go too.",
    )
    answer: bool = Field(
        default=True,
        description="Also teach the answer prompt on the training questions (when `answer` is a task).",
    )
    step_answers: bool = Field(
        default=False,
        description="Also teach the answer prompt on every step of the training questions' published "
        "chains (MuSiQue decompositions, 2Wiki evidences; earlier answers filled in, each step shown its "
        "own supporting paragraph): the planner's step answers (when `answer` is a task).",
    )


class DistillOptim(StrictModel):
    max_steps: int = Field(default=400, ge=1, description="Optimizer steps in all.")
    batch_size: int = Field(default=4, ge=1, description="Examples per worker per step.")
    learning_rate: float = Field(default=5e-4, gt=0)
    weight_decay: float = Field(default=0.0, ge=0)
    grad_clip: float = Field(default=1.0, gt=0)
    max_tokens: int = Field(default=512, ge=32, description="Prompt + target tokens kept per example.")
    warmup_steps: int = Field(
        default=20, ge=0, description="Linear warm-up; then the learning rate decays linearly to 10%."
    )
    precision: Literal["auto", "bf16", "fp32"] = Field(
        default="auto",
        description="bf16: autocast the forward pass (adapter weights and optimizer stay fp32; about "
        "1.6x faster on CPUs with AVX512-BF16 or AMX and the norm on GPUs, but minutes a step on a CPU "
        "without them, where PyTorch falls back to a reference kernel); fp32: no autocast; auto: bf16 "
        "on GPUs and on CPUs that compute bf16 natively, else fp32.",
    )


class DistillConfig(StrictModel):
    """Teacher → student distillation: which tasks, which teacher, which data, how to train."""

    tasks: list[Task] = Field(
        default_factory=lambda: ["openie", "ner"],
        min_length=1,
        description="Trained into one adapter: openie and ner (indexing; the teacher answers them), answer "
        "(retrieve mode's and the planner's step answers; gold answers), plan and update (the planner's "
        "plan and plan-update prompts; gold search plans of the question records).",
    )
    teacher: LLMBackendConfig = Field(
        default_factory=LLMBackendConfig,
        description="Any backend: an OpenAI-compatible endpoint, vLLM, or `reference` for a synthetic corpus.",
    )
    extraction: ExtractionConfig = Field(
        default_factory=ExtractionConfig,
        description="Passage splitting and teacher generation, as indexing does it (the teacher cache keys on it).",
    )
    max_documents: int | None = Field(default=None, ge=1, description="Use the corpus's first N documents.")
    max_questions: int | None = Field(
        default=None, ge=1, description="Use the first N questions (ner and answer tasks)."
    )
    answer: AnswerTaskSettings = Field(default_factory=AnswerTaskSettings)
    update: UpdateTaskSettings = Field(default_factory=UpdateTaskSettings)
    held_out_fraction: float = Field(
        default=0.1, ge=0, lt=1, description="Examples held out (by a hash of their input) for the metrics."
    )
    gold: GoldCorrection = Field(
        default_factory=GoldCorrection,
        description="Real paragraphs of published benchmarks, the teacher's triples corrected by the gold "
        "facts of their training questions (distillation/gold.py); none by default.",
    )
    held_out_titles: list[HeldOutTitles] = Field(
        default_factory=list,
        description="Corpus entries whose paragraphs never enter the student's training data, from the "
        "corpus being distilled or from `gold.sources` (distillation/held_out.py); a recipe that reads "
        "the 2Wiki corpus holds out its first 3,000.",
    )
    teacher_set: Path | None = Field(
        default=None,
        description="A Parquet file of the teacher's answers kept across runs (e.g. under "
        "benchmarks/data/real/teacher/): read into the run's teacher cache before the teacher is asked, "
        "so only passages it lacks cost teacher time, and written back (merged) after the teacher "
        "stage, with NAME.provenance.json (distillation/teacher_set.py).",
    )
    base: StudentBase = Field(default_factory=StudentBase)
    init_adapter: str | None = Field(
        default=None,
        description="Start from this adapter's weights instead of fresh ones: a directory, or `packaged` "
        "(the shipped student). Its LoRA settings must match `lora`.",
    )
    lora: LoraSettings = Field(default_factory=LoraSettings)
    optim: DistillOptim = Field(default_factory=DistillOptim)
    run: RunSettings = Field(default_factory=lambda: RunSettings(num_workers=1, checkpoint_every=100))
    ray: RayConfig = Field(default_factory=RayConfig)
    seed: int = 0
