"""LoRA on a BERT GLM backbone: the pretrained weights stay as they are, low-rank updates (``peft``)
and the LayerNorms learn the graph reading.

Why: a fully fine-tuned MiniLM GLM is a 22.9 M-parameter checkpoint (~90 MB in fp32), too big to
ship in the package or to keep one per domain. With LoRA the exported retriever stores only what
training changed (the low-rank matrices, the LayerNorms, the graph bias and the scoring head: a few
MB) and reads the rest from the packaged MiniLM it was trained on, so a general GLM can ship with
hoprag and be fine-tuned per corpus (``hoprag train --init``). The update matrices ``B`` start at
zero (peft's LoRA init), so at step 0 a LoRA backbone computes exactly what the plain one does.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from pydantic import Field

from hoprag.config import StrictModel

if TYPE_CHECKING:
    from torch import nn

# BERT's linear layers: attention query/key/value, and every ``dense`` (attention output,
# intermediate, output). peft matches a target against the end of a module's name.
BERT_LINEAR_MODULES = ("query", "key", "value", "dense")
# What names a LoRA update matrix in a state dict (peft's naming).
LORA_PARAMETER_MARKERS = (".lora_A.", ".lora_B.")


class GLMLoRAConfig(StrictModel):
    """Low-rank adaptation of a BERT backbone's linear layers instead of training its weights."""

    rank: int = Field(default=16, ge=1, description="Rank of the update matrices.")
    alpha: int = Field(
        default=32, ge=1, description="Scaling numerator (the update is scaled by alpha / rank)."
    )
    dropout: float = Field(default=0.0, ge=0, lt=1, description="Dropout on the LoRA branch's input.")
    target_modules: list[str] = Field(
        default_factory=lambda: list(BERT_LINEAR_MODULES),
        min_length=1,
        description="Module-name suffixes that get updates; default: every linear layer of every BERT layer.",
    )
    train_layer_norms: bool = Field(
        default=True,
        description="Train the backbone's LayerNorm scales and shifts too (13 x 768 values for MiniLM): they "
        "are how a frozen network re-centres states that the graph bias shifted.",
    )


def add_lora(backbone: nn.Module, config: GLMLoRAConfig) -> None:
    """Inject LoRA layers into ``backbone`` in place and freeze everything else in it but (optionally)
    the LayerNorms. Modules outside ``backbone`` are not touched."""
    from peft import LoraConfig, inject_adapter_in_model

    peft_config = LoraConfig(
        r=config.rank,
        lora_alpha=config.alpha,
        lora_dropout=config.dropout,
        target_modules=list(config.target_modules),
        bias="none",
    )
    no_match = ValueError(
        f"lora.target_modules {config.target_modules} matched no module of the backbone "
        f"(BERT's linear layers are {list(BERT_LINEAR_MODULES)})"
    )
    try:
        inject_adapter_in_model(peft_config, backbone)
    except ValueError as exc:  # peft's "Target modules ... not found in the base model"
        raise no_match from exc
    if not any(is_lora_parameter(name) for name, _ in backbone.named_parameters()):
        raise no_match
    for name, param in backbone.named_parameters():
        trained = is_lora_parameter(name) or (config.train_layer_norms and ".LayerNorm." in name)
        param.requires_grad_(trained)


def is_lora_parameter(name: str) -> bool:
    """Whether a parameter name is a LoRA update matrix."""
    return any(marker in name for marker in LORA_PARAMETER_MARKERS)


def trained_parameter_names(module: nn.Module) -> set[str]:
    """The names (``state_dict`` keys) of the parameters training changes: what a LoRA export stores."""
    return {name for name, param in module.named_parameters() if param.requires_grad}


def frozen_weights_sha256(module: nn.Module) -> str:
    """SHA-256 over the frozen tensors of ``module`` (name order): the pretrained weights a LoRA export
    was trained on, which the loader must find again before adding the stored updates to them."""
    import torch

    trained = trained_parameter_names(module)
    digest = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        if name in trained:
            continue
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def merge_lora_updates(model: nn.Module) -> int:
    """Add every LoRA update into its base weights in place (inference: the forward then costs what
    the plain backbone's does); returns how many layers were merged (0 without LoRA). A merged model
    is for retrieval only: training it would train the merged weights' updates twice over."""
    from peft.tuners.lora import LoraLayer

    merged = 0
    for module in model.modules():
        if isinstance(module, LoraLayer) and not module.merged:
            module.merge()
            merged += 1
    return merged
