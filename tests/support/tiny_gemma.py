"""A tiny randomly initialised Gemma 3 causal LM: real transformers and peft code paths in
milliseconds (LoRA training, adapter merging)."""

from __future__ import annotations

from typing import Any


def tiny_gemma(num_hidden_layers: int) -> Any:
    """A seeded, randomly initialised Gemma 3 of a few thousand parameters (vocabulary of 97)."""
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(0)
    config = Gemma3TextConfig(
        vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=num_hidden_layers,
        num_attention_heads=2, num_key_value_heads=1, head_dim=16, sliding_window=8,
    )  # fmt: skip
    return Gemma3ForCausalLM(config)
