"""The T5 encoder the GLM is built on: any HF T5 checkpoint, or the embedded small T5.

No pretrained T5 ships offline, so the embedded default is a small T5 encoder built from config
whose token embeddings are warm-started from the packaged all-MiniLM-L6-v2 (same WordPiece
vocabulary and tokenizer, d_model 384) instead of random init. MiniLM's embedding rows are
rescaled to T5's initial scale (std ≈ ``initializer_factor``), keeping their directions: T5 has
no embedding LayerNorm, so raw MiniLM magnitudes (std ≈ 0.05) would leave the first attention
layers nearly blind.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pydantic import Field

from hoprag.config import StrictModel
from hoprag.embedding import packaged_minilm_path

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase, T5EncoderModel

EMBEDDED = "embedded"


class BackboneConfig(StrictModel):
    """Which T5 encoder to turn into a GLM."""

    model: str = Field(
        default=EMBEDDED,
        description="'embedded' (small T5 warm-started from the packaged MiniLM), or an HF T5 checkpoint id or "
        "local path (t5-small/base/large, google/flan-t5-*, ...).",
    )
    num_layers: int = Field(default=4, ge=1, description="Embedded T5 only: encoder layers.")
    num_heads: int = Field(
        default=6, ge=1, description="Embedded T5 only: attention heads (d_kv = 384 / heads)."
    )
    d_ff: int = Field(default=1024, ge=16, description="Embedded T5 only: feed-forward width.")
    relative_attention_num_buckets: int = Field(default=32, ge=4, description="Embedded T5 only.")
    relative_attention_max_distance: int = Field(default=128, ge=8, description="Embedded T5 only.")
    dropout_rate: float = Field(default=0.1, ge=0, lt=1, description="Embedded T5 only.")
    seed: int = Field(default=0, description="Embedded T5 only: init seed of the non-warm-started weights.")


def load_tokenizer(config: BackboneConfig) -> PreTrainedTokenizerBase:
    """The tokenizer matching the backbone (MiniLM's WordPiece for the embedded T5)."""
    from transformers import AutoTokenizer

    if config.model == EMBEDDED:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        return AutoTokenizer.from_pretrained(packaged_minilm_path())
    return AutoTokenizer.from_pretrained(config.model)


def build_backbone(config: BackboneConfig) -> T5EncoderModel:
    """A T5 encoder: pretrained weights for a checkpoint, or the warm-started embedded model."""
    from transformers import T5EncoderModel

    if config.model != EMBEDDED:
        return T5EncoderModel.from_pretrained(config.model)
    return _embedded_t5(config)


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
    """Sizes worth logging: layers, heads, d_model, buckets, parameters."""
    cfg = model.config
    return {
        "layers": cfg.num_layers,
        "heads": cfg.num_heads,
        "d_model": cfg.d_model,
        "buckets": cfg.relative_attention_num_buckets,
        "parameters": sum(p.numel() for p in model.parameters()),
    }
