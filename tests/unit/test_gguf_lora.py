"""A PEFT LoRA adapter converted to llama.cpp's LoRA GGUF: tensor names as the base GGUF names its
weights, A and B in the layout llama.cpp checks, the scale kept, cached by content; adapters llama.cpp
cannot apply are refused with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hoprag.llm.adapters import AdapterError
from hoprag.llm.gguf_lora import lora_gguf

RANK, HIDDEN = 4, 8


def write_adapter(folder: Path, modules: tuple[str, ...] = ("q_proj", "o_proj"), **config: object) -> Path:
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    tensors = {}
    for layer in range(2):
        for module in modules:
            key = f"base_model.model.model.layers.{layer}.self_attn.{module}"
            tensors[f"{key}.lora_A.weight"] = np.full((RANK, HIDDEN), layer + 1, dtype=np.float32)
            tensors[f"{key}.lora_B.weight"] = np.full((HIDDEN * 2, RANK), -1, dtype=np.float32)
    save_file(tensors, str(folder / "adapter_model.safetensors"))
    settings = {"peft_type": "LORA", "r": RANK, "lora_alpha": 8, "target_modules": list(modules), **config}
    (folder / "adapter_config.json").write_text(json.dumps(settings))
    return folder


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOPRAG_CACHE_DIR", str(tmp_path / "cache"))


def read(path: Path) -> tuple[dict[str, object], dict[str, tuple[int, ...]]]:
    from gguf import GGUFReader

    reader = GGUFReader(str(path))
    fields = {}
    for key in ("general.type", "adapter.type", "general.architecture"):
        field = reader.fields[key]
        fields[key] = bytes(field.parts[field.data[0]]).decode()
    alpha = reader.fields["adapter.lora.alpha"]
    fields["alpha"] = float(alpha.parts[alpha.data[0]][0])
    shapes = {t.name: tuple(int(n) for n in t.shape) for t in reader.tensors}
    return fields, shapes


def test_a_peft_adapter_becomes_a_llamacpp_lora_gguf_named_like_the_base_weights(tmp_path: Path) -> None:
    path = lora_gguf(write_adapter(tmp_path / "student"), "gemma3")
    fields, shapes = read(path)
    assert fields == {
        "general.type": "adapter",
        "adapter.type": "lora",
        "general.architecture": "gemma3",
        "alpha": 8.0,
    }
    assert set(shapes) == {
        f"blk.{layer}.{name}.weight.lora_{part}"
        for layer in range(2)
        for name in ("attn_q", "attn_output")
        for part in "ab"
    }
    # ggml's dimension order (innermost first): A is (in, r) and B (r, out), as llama.cpp checks
    # them against the base weight (in, out)
    assert shapes["blk.0.attn_q.weight.lora_a"] == (HIDDEN, RANK)
    assert shapes["blk.0.attn_q.weight.lora_b"] == (RANK, HIDDEN * 2)
    assert lora_gguf(tmp_path / "student", "gemma3") == path  # converted once, kept in the cache


def test_rslora_keeps_its_scale_through_alpha(tmp_path: Path) -> None:
    fields, _ = read(lora_gguf(write_adapter(tmp_path / "rs", use_rslora=True), "qwen2"))
    assert fields["alpha"] == pytest.approx(8 * RANK**0.5)  # llama.cpp scales by alpha / r


def test_adapters_llamacpp_cannot_apply_are_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(AdapterError, match="not DoRA"):
        lora_gguf(write_adapter(tmp_path / "dora", use_dora=True), "gemma3")
    with pytest.raises(AdapterError, match="no gemma3 GGUF tensor name"):
        lora_gguf(write_adapter(tmp_path / "odd", modules=("router_proj",)), "gemma3")
    with pytest.raises(AdapterError, match="no architecture 'nonesuch'"):
        lora_gguf(write_adapter(tmp_path / "arch"), "nonesuch")
    with pytest.raises(AdapterError, match=r"no adapter_config\.json"):
        lora_gguf(tmp_path / "absent", "gemma3")
