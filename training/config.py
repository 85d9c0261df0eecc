"""``hoprag train``'s config: model, data, optimization, DeepSpeed and Ray Train settings."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from hoprag.config import StrictModel
from hoprag.glm.backbone import BackboneConfig
from hoprag.glm.settings import GLMSettings
from hoprag.gnn.settings import GNNSettings


class OptimConfig(StrictModel):
    """AdamW with the paper's differential learning rates."""

    head_lr: float = Field(default=5e-4, gt=0, description="question_proj + entity_scorer (paper: 5e-4).")
    backbone_lr: float = Field(default=1e-4, gt=0, description="The pretrained encoder (paper: 1e-4).")
    weight_decay: float = Field(default=0.0, ge=0)
    lr_schedule: Literal["constant", "warmup_linear"] = Field(
        default="constant",
        description="constant: the paper's fixed rates; warmup_linear: every group's rate rises "
        "linearly over `warmup_steps`, then falls linearly to `final_lr_fraction` of it at the run's "
        "last step (`max_steps`, or the end of the last epoch).",
    )
    warmup_steps: int = Field(default=0, ge=0, description="warmup_linear: steps of linear warm-up.")
    final_lr_fraction: float = Field(
        default=0.0, ge=0, le=1, description="warmup_linear: the rates at the last step, as a fraction."
    )
    grad_clip: float = Field(default=1.0, ge=0, description="Gradient norm clipping (0 = off).")
    bce_weight: float = Field(default=0.44, ge=0)
    list_ce_weight: float = Field(default=0.56, ge=0)


class DeepSpeedSettings(StrictModel):
    """What goes into the DeepSpeed config each worker builds."""

    zero_stage: Literal[0, 1, 2, 3] = Field(
        default=2, description="ZeRO stage (export supports 0-2 directly)."
    )
    precision: Literal["fp32", "bf16", "fp16"] = Field(default="fp32", description="bf16 on GPUs.")
    micro_batch_size: int = Field(default=2, ge=1, description="Questions per worker per step (paper: 2).")
    gradient_accumulation_steps: int = Field(default=1, ge=1)
    activation_checkpointing: bool = Field(
        default=False,
        description="GLM only: recompute each backbone layer's activations in the backward instead of "
        "keeping them (a t5-large step at 600 triples: 23 instead of 106 GiB, 1.24x the time; "
        "docs/bench-retrievers.md).",
    )


class RunSettings(StrictModel):
    """Ray Train: workers, resources, fault tolerance, checkpoints."""

    num_workers: int = Field(default=2, ge=1, description="Data-parallel workers.")
    use_gpu: bool = Field(default=False, description="One GPU per worker, NCCL; CPU workers use gloo.")
    cpus_per_worker: float = Field(default=1.0, gt=0)
    storage_path: str | None = Field(
        default=None, description="Local path or s3://, gs://...; default RUN_DIR/ray."
    )
    max_failures: int = Field(default=2, ge=0, description="Worker/node failures Ray Train recovers from.")
    checkpoint_every: int = Field(default=50, ge=1, description="Optimizer steps between checkpoints.")
    keep_checkpoints: int = Field(default=2, ge=1)


class IndexSource(StrictModel):
    """One index to train on."""

    path: Path = Field(
        description="Index directory with processed questions (relative to the working directory)."
    )
    name: str | None = Field(
        default=None,
        min_length=1,
        pattern=r"^[^/\s]+$",
        description="Label in metrics (val_recall@2/NAME, examples/NAME); default: the directory's name "
        "(PARENT-NAME where two indexes' directories share a name).",
    )
    weight: float | None = Field(
        default=None,
        gt=0,
        description="Relative sampling weight. Unset on every index (default): indexes are mixed in "
        "proportion to their training questions, each question once per epoch. Set on every index: "
        "an epoch (as many examples as all indexes have training questions) draws from each index in "
        "proportion to its weight, cycling through a small index's questions or using a subset of a "
        "large one's.",
    )

    @property
    def label(self) -> str:
        return self.name or self.path.name


class TrainData(StrictModel):
    """Which indexes to train on and how training examples reach the workers."""

    indexes: list[IndexSource] = Field(
        default_factory=list,
        description="Indexes to train on; `hoprag train --index` (repeatable) replaces this list.",
    )
    streaming: bool = Field(
        default=True,
        description="Encode training subgraphs in a Ray Data map stage and stream them to the workers "
        "(ray.train.get_dataset_shard); false: each worker samples and encodes its own questions "
        "in-process (no Ray Data actors; a fixed order; exact resume). The CPU recipes use false: "
        "while the stream waits for the trainers, Ray Data's scheduling loop keeps most of a core "
        "busy, a third of a 2-core machine (docs/glm.md §15).",
    )
    map_batch_size: int = Field(
        default=4,
        ge=1,
        description="Questions per Ray Data batch of the encoding stage (a batch of "
        "encoded subgraphs is tokens² bytes each: keep it small).",
    )
    map_concurrency: int = Field(default=1, ge=1, description="Encoding actors (each loads every index).")
    map_num_cpus: float = Field(
        default=0.25,
        gt=0,
        description="CPUs reserved per encoding actor; fractional so that the actors fit beside the "
        "training workers on small machines.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> TrainData:
        # Unnamed indexes whose directories share a name (runs/a/index, runs/b/index) are told
        # apart by their parent directory (a-index, b-index).
        defaults = [s.path.name for s in self.indexes if s.name is None]
        for s in self.indexes:
            if s.name is None and defaults.count(s.path.name) > 1 and s.path.parent.name:
                s.name = f"{s.path.parent.name}-{s.path.name}"
        labels = [s.label for s in self.indexes]
        duplicates = sorted({n for n in labels if labels.count(n) > 1})
        if duplicates:
            raise ValueError(f"index names must be unique (set `name`): {', '.join(duplicates)} repeated")
        weighted = [s.weight is not None for s in self.indexes]
        if any(weighted) and not all(weighted):
            raise ValueError("set `weight` on every index or on none (none = proportional to questions)")
        return self


class TrainConfig(StrictModel):
    """Everything ``hoprag train`` needs besides ``--out`` (indexes: ``data.indexes`` or ``--index``)."""

    retriever: Literal["glm", "gnn"] = Field(
        default="glm",
        description="What to train: glm (the graph language model: `backbone` and `glm` sections) or gnn "
        "(GFM-RAG's query-dependent NBFNet baseline: the `gnn` section). Data, optimizer, DeepSpeed, "
        "Ray Train settings and the losses are shared.",
    )
    data: TrainData = Field(default_factory=TrainData)
    backbone: BackboneConfig = Field(default_factory=BackboneConfig)
    glm: GLMSettings = Field(default_factory=GLMSettings)
    gnn: GNNSettings = Field(default_factory=GNNSettings)
    optim: OptimConfig = Field(default_factory=OptimConfig)
    deepspeed: DeepSpeedSettings = Field(default_factory=DeepSpeedSettings)
    run: RunSettings = Field(default_factory=RunSettings)
    epochs: int = Field(default=2, ge=1, description="Passes over the training questions (paper: 2).")
    max_steps: int | None = Field(default=None, ge=1, description="Stop after this many optimizer steps.")
    validation_fraction: float = Field(
        default=0.1, ge=0, lt=1, description="Share of train questions held out for per-epoch Recall@2/5."
    )
    train_split: str = Field(default="train", description="Question split of the index to train on.")
    seed: int = 0
    init: str | None = Field(
        default=None,
        description="Warm start: an exported retriever (RUN_DIR or RUN_DIR/retriever) whose weights the "
        "model starts from (fresh optimizer, step 0; the run's own checkpoints still win on a re-run). "
        "The backbone and the GLM settings that shape the network (global_graph, with_text, question_dim, "
        "question_embedder) come from it; the other glm settings default to its values, and this config "
        "may override them. See docs/glm.md. GLM retrievers only.",
    )

    @model_validator(mode="after")
    def _init_is_glm(self) -> TrainConfig:
        if self.init is not None and self.retriever != "glm":
            raise ValueError(
                "init (warm start) is implemented for GLM retrievers only; unset it for a gnn run"
            )
        if self.deepspeed.activation_checkpointing and self.retriever != "glm":
            raise ValueError(
                "deepspeed.activation_checkpointing applies to the GLM's language-model backbone; "
                "a gnn run has none"
            )
        return self
