"""The encoder the GLM is built on: the packaged MiniLM, any HF T5 (or BERT) checkpoint, or the
embedded small T5.

``minilm`` is the packaged all-MiniLM-L6-v2, a pretrained 6-layer BERT, loaded unchanged and
given the GLM's graph bias by :class:`hoprag.glm.bert_encoder.GraphBertEncoder`. A checkpoint
id or path whose config says ``model_type: bert`` takes the same route; every other checkpoint
is loaded as a T5 encoder (:class:`hoprag.glm.encoder.GraphT5Encoder`), as before.

No pretrained T5 ships offline, so the embedded default is a small T5 encoder built from config
whose token embeddings are warm-started from the packaged all-MiniLM-L6-v2 (same WordPiece
vocabulary and tokenizer, d_model 384) instead of random init. MiniLM's embedding rows are
rescaled to T5's initial scale (std ≈ ``initializer_factor``), keeping their directions: T5 has
no embedding LayerNorm, so raw MiniLM magnitudes (std ≈ 0.05) would leave the first attention
layers nearly blind.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator, model_validator

from hoprag.config import StrictModel
from hoprag.embedding import packaged_minilm_path
from hoprag.glm.lora import GLMLoRAConfig

if TYPE_CHECKING:
    from transformers import BertModel, PreTrainedTokenizerBase, T5EncoderModel

    from hoprag.glm.encoder import GraphEncoder

EMBEDDED = "embedded"
MINILM = "minilm"
_ALIASES = {"embedded-t5": EMBEDDED}


class BackboneConfig(StrictModel):
    """Which pretrained encoder to turn into a GLM."""

    model: str = Field(
        default=EMBEDDED,
        description="'embedded' (alias 'embedded-t5': small T5 warm-started from the packaged MiniLM), "
        "'minilm' (the packaged pretrained MiniLM BERT plus a learned graph bias), or an HF checkpoint id or "
        "local path: T5 (t5-small/base/large, google/flan-t5-*, ...) or BERT (model_type 'bert').",
    )
    absolute_positions: Literal["per_node", "sequence", "none"] = Field(
        default="per_node",
        description="BERT backbones only: absolute position ids. per_node: restart at 0 in every node (each "
        "label reads as a phrase), the question keeps its ordinary positions; sequence: 0..N-1 over the whole "
        "input (order-dependent); none: no position embedding.",
    )
    frozen_local_layers: int = Field(
        default=0,
        ge=0,
        description="BERT backbones only: the lowest K layers read each node label (and the question) on its "
        "own, with no graph bias, frozen pretrained weights and no dropout, run without autograd; the graph "
        "bias and training start at layer K (at least one layer must remain). 0: every layer sees the graph.",
    )
    lora: GLMLoRAConfig | None = Field(
        default=None,
        description="BERT backbones only: train LoRA updates (and the LayerNorms) instead of the pretrained "
        "weights; the export then stores only what training changed (a few MB instead of ~90) and reads the "
        "rest from the backbone's checkpoint. null: train every weight.",
    )
    num_layers: int = Field(default=4, ge=1, description="Embedded T5 only: encoder layers.")
    num_heads: int = Field(
        default=6, ge=1, description="Embedded T5 only: attention heads (d_kv = 384 / heads)."
    )
    d_ff: int = Field(default=1024, ge=16, description="Embedded T5 only: feed-forward width.")
    relative_attention_num_buckets: int = Field(
        default=32, ge=4, description="Embedded T5 and BERT backbones (the graph bias table)."
    )
    relative_attention_max_distance: int = Field(
        default=128, ge=8, description="Embedded T5 and BERT backbones (the graph bias table)."
    )
    dropout_rate: float = Field(default=0.1, ge=0, lt=1, description="Embedded T5 only.")
    attention_dropout: float | None = Field(
        default=None,
        ge=0,
        lt=1,
        description="BERT backbones only: dropout on the attention probabilities (None: the checkpoint's, "
        "MiniLM 0.1; with init, the init retriever's). At 0 CPU training draws no N x N random mask per "
        "layer: about a quarter of a step at 100 triples (docs/bench-retrievers.md).",
    )
    seed: int = Field(default=0, description="Embedded T5 only: init seed of the non-warm-started weights.")

    @field_validator("model")
    @classmethod
    def _canonical_name(cls, value: str) -> str:
        return _ALIASES.get(value, value)

    @model_validator(mode="after")
    def _attention_dropout_needs_bert(self) -> BackboneConfig:
        if self.attention_dropout is not None and self.model == EMBEDDED:
            raise ValueError(
                "attention_dropout applies to BERT backbones; the embedded T5's dropout is dropout_rate"
            )
        if self.frozen_local_layers and self.model == EMBEDDED:
            raise ValueError("frozen_local_layers applies to BERT backbones, not the embedded T5")
        if self.lora is not None and self.model == EMBEDDED:
            raise ValueError("lora applies to BERT backbones, not the embedded T5")
        if self.lora is not None and self.frozen_local_layers:
            raise ValueError("lora and frozen_local_layers are two ways to freeze the backbone: choose one")
        return self


def _uses_packaged_minilm(config: BackboneConfig) -> bool:
    return config.model in (EMBEDDED, MINILM)


def is_bert_backbone(config: BackboneConfig) -> bool:
    """Whether the backbone is a BERT encoder (``minilm`` or a checkpoint of ``model_type: bert``)."""
    if config.model == MINILM:
        return True
    if config.model == EMBEDDED:
        return False
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(config.model).model_type == "bert"


def load_tokenizer(config: BackboneConfig) -> PreTrainedTokenizerBase:
    """The tokenizer matching the backbone (MiniLM's WordPiece for ``minilm`` and the embedded T5)."""
    from transformers import AutoTokenizer

    if _uses_packaged_minilm(config):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        return AutoTokenizer.from_pretrained(packaged_minilm_path())
    return AutoTokenizer.from_pretrained(config.model)


def build_backbone(config: BackboneConfig) -> T5EncoderModel | BertModel:
    """The HF encoder with its pretrained weights (or the warm-started embedded T5)."""
    from transformers import BertModel, T5EncoderModel

    if config.model == EMBEDDED:
        return _embedded_t5(config)
    if is_bert_backbone(config):
        if config.model == MINILM:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        path = packaged_minilm_path() if config.model == MINILM else config.model
        bert = BertModel.from_pretrained(path)
        bert.pooler = None  # the GLM reads token states; an unused pooler would have no gradient
        return bert
    return T5EncoderModel.from_pretrained(config.model)


def build_graph_encoder(
    config: BackboneConfig, global_graph: bool = True, with_text: bool = True
) -> GraphEncoder:
    """The backbone turned into a GLM graph encoder (the GLM variant decides the extra buckets)."""
    from hoprag.glm.bert_encoder import GraphBertEncoder
    from hoprag.glm.encoder import GraphT5Encoder

    backbone = build_backbone(config)
    if backbone.config.model_type == "bert":
        encoder = GraphBertEncoder(
            backbone,
            global_graph,
            with_text,
            num_buckets=config.relative_attention_num_buckets,
            max_distance=config.relative_attention_max_distance,
            absolute_positions=config.absolute_positions,
            name=config.model,
            frozen_local_layers=config.frozen_local_layers,
            lora=config.lora,
        )
        if config.attention_dropout is not None:
            encoder.set_attention_dropout(config.attention_dropout)
        return encoder
    if config.attention_dropout is not None:
        raise ValueError(
            f"backbone.attention_dropout applies to BERT backbones; {config.model!r} is a T5 "
            "(the embedded T5's dropout is backbone.dropout_rate)"
        )
    if config.frozen_local_layers:
        raise ValueError(f"backbone.frozen_local_layers applies to BERT backbones; {config.model!r} is a T5")
    if config.lora is not None:
        raise ValueError(f"backbone.lora applies to BERT backbones; {config.model!r} is a T5")
    return GraphT5Encoder(backbone, global_graph, with_text, name=config.model)


def _embedded_t5(config: BackboneConfig) -> T5EncoderModel:
    import torch
    from safetensors.torch import load_file
    from transformers import T5Config, T5EncoderModel

    minilm = load_file(os.path.join(packaged_minilm_path(), "model.safetensors"))
    key = next(k for k in minilm if k.endswith("word_embeddings.weight"))
    word_embeddings = minilm[key].float()
    vocab_size, d_model = word_embeddings.shape
    if d_model % config.num_heads:
        raise ValueError(f"num_heads={config.num_heads} must divide d_model={d_model}")
    t5_config = T5Config(
        vocab_size=vocab_size,
        d_model=d_model,
        d_kv=d_model // config.num_heads,
        d_ff=config.d_ff,
        num_layers=config.num_layers,
        num_heads=config.num_heads,
        relative_attention_num_buckets=config.relative_attention_num_buckets,
        relative_attention_max_distance=config.relative_attention_max_distance,
        dropout_rate=config.dropout_rate,
        feed_forward_proj="gated-gelu",
        pad_token_id=0,
        is_encoder_decoder=False,
        use_cache=False,
    )
    torch.manual_seed(config.seed)
    model = T5EncoderModel(t5_config)
    with torch.no_grad():
        scale = t5_config.initializer_factor / word_embeddings.std().clamp_min(1e-6)
        model.shared.weight.copy_(word_embeddings * scale)
    return model


def backbone_summary(model: Any) -> dict[str, Any]:
    """Sizes worth logging: layers, heads, d_model, buckets, parameters (of a backbone or graph encoder)."""
    is_graph_encoder = hasattr(model, "num_buckets")
    cfg = (model.backbone if is_graph_encoder else model).config
    if cfg.model_type == "bert":
        layers, heads, d_model = cfg.num_hidden_layers, cfg.num_attention_heads, cfg.hidden_size
    else:
        layers, heads, d_model = cfg.num_layers, cfg.num_heads, cfg.d_model
    return {
        "layers": layers,
        "heads": heads,
        "d_model": d_model,
        "buckets": model.num_buckets
        if is_graph_encoder
        else getattr(cfg, "relative_attention_num_buckets", None),
        "parameters": sum(p.numel() for p in model.parameters()),
    }
