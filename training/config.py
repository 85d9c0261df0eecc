"""``hoprag train``'s config: model, data, optimization, DeepSpeed and Ray Train settings."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from hoprag.config import StrictModel
from hoprag.glm.backbone import BackboneConfig
from hoprag.glm.settings import GLMSettings


class OptimConfig(StrictModel):
    """AdamW with the paper's differential learning rates."""

    head_lr: float = Field(default=5e-4, gt=0, description="question_proj + entity_scorer (paper: 5e-4).")
    backbone_lr: float = Field(default=1e-4, gt=0, description="The pretrained encoder (paper: 1e-4).")
    weight_decay: float = Field(default=0.0, ge=0)
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


class TrainConfig(StrictModel):
    """Everything ``hoprag train`` needs besides ``--index`` and ``--out``."""

    backbone: BackboneConfig = Field(default_factory=BackboneConfig)
    glm: GLMSettings = Field(default_factory=GLMSettings)
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
        "may override them. See docs/glm.md.",
    )
