"""The embedded T5 backbone: MiniLM warm start, tokenizer match, a forward pass."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from hoprag.embedding import packaged_minilm_path
from hoprag.glm.backbone import BackboneConfig, backbone_summary, build_backbone, load_tokenizer


def test_embedded_backbone_is_warm_started_from_minilm():
    cfg = BackboneConfig(num_layers=2)
    model = build_backbone(cfg)
    tok = load_tokenizer(cfg)
    minilm = load_file(f"{packaged_minilm_path()}/model.safetensors")
    words = next(v for k, v in minilm.items() if k.endswith("word_embeddings.weight")).float()
    shared = model.shared.weight.detach()
    assert shared.shape == words.shape == (tok.vocab_size, 384)
    # same directions, rescaled to T5's init scale
    cos = torch.nn.functional.cosine_similarity(shared[1000:1100], words[1000:1100], dim=-1)
    assert torch.allclose(cos, torch.ones_like(cos), atol=1e-5)
    assert shared.std().item() == pytest.approx(model.config.initializer_factor, rel=1e-3)
    ids = tok(["Juno Halleck studied at Carrow College."], return_tensors="pt")
    out = model(input_ids=ids["input_ids"], attention_mask=ids["attention_mask"]).last_hidden_state
    assert out.shape == (1, ids["input_ids"].shape[1], 384) and torch.isfinite(out).all()
    assert backbone_summary(model)["layers"] == 2


def test_bad_head_count_is_a_clear_error():
    with pytest.raises(ValueError, match="must divide"):
        build_backbone(BackboneConfig(num_heads=5))
