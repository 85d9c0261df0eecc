"""A PEFT LoRA adapter (a `hoprag distill` student) as a llama.cpp LoRA GGUF.

llama.cpp applies a LoRA adapter at run time on top of the quantized weights
(``W x + alpha / r * B (A x)``, what PEFT merges into de-quantized weights), so the student keeps
its 6 MB adapter and the base its Q4_K_M GGUF. The adapter file llama.cpp reads is a GGUF of
``general.type = adapter``, ``adapter.type = lora``, ``adapter.lora.alpha``, and one
``<gguf tensor>.lora_a`` / ``.lora_b`` pair per adapted projection, named as the base GGUF names
its weight (``model.layers.3.self_attn.q_proj`` → ``blk.3.attn_q.weight``; ``gguf``'s own name map
of the architecture). The converted file is kept in the cache, keyed by the adapter's content and
the architecture, written atomically.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from hoprag.atomic import atomic_path, file_lock
from hoprag.llm.adapters import AdapterError, adapter_fingerprint
from hoprag.paths import cache_dir

_LORA_KEY = re.compile(r"^(?:base_model\.model\.)?(?P<module>.+)\.lora_(?P<part>[AB])\.weight$")
_LAYER = re.compile(r"\.layers\.(\d+)\.")


def lora_gguf(adapter: str | Path, architecture: str, setting: str = "llm.llamacpp.adapter") -> Path:
    """The llama.cpp LoRA GGUF of the PEFT adapter directory ``adapter`` for a base model of
    ``architecture`` (``general.architecture`` of its GGUF), converted on first use.
    :class:`~hoprag.llm.adapters.AdapterError` for an adapter llama.cpp cannot apply (DoRA, a
    module without a GGUF name, an unknown architecture)."""
    fingerprint = adapter_fingerprint(adapter, setting)
    target = cache_dir() / "gguf" / "adapters" / f"{fingerprint}-{architecture}.gguf"
    if target.exists():
        return target
    with file_lock(target.with_suffix(".lock")):
        if not target.exists():
            _convert(Path(adapter), architecture, target, setting)
    return target


def _convert(adapter: Path, architecture: str, target: Path, setting: str) -> None:
    import json

    import gguf
    import numpy as np
    from safetensors.numpy import load_file

    config = json.loads((adapter / "adapter_config.json").read_text(encoding="utf-8"))
    if config.get("peft_type", "LORA") != "LORA" or config.get("use_dora"):
        raise AdapterError(f"{setting}={adapter}: llama.cpp applies plain LoRA adapters only (not DoRA)")
    rank = int(config["r"])
    alpha = float(config.get("lora_alpha", rank))
    if config.get("use_rslora"):  # rsLoRA scales by alpha / sqrt(r); llama.cpp by alpha / r
        alpha *= math.sqrt(rank)
    arch = next((a for a, name in gguf.MODEL_ARCH_NAMES.items() if name == architecture), None)
    if arch is None:
        raise AdapterError(f"{setting}={adapter}: gguf knows no architecture {architecture!r}")
    tensors = load_file(str(adapter / "adapter_model.safetensors"))
    pairs: dict[str, dict[str, np.ndarray]] = {}
    for key, value in tensors.items():
        found = _LORA_KEY.match(key)
        if found is None:
            raise AdapterError(f"{setting}={adapter}: {key} is not a LoRA A/B weight")
        pairs.setdefault(found["module"], {})[found["part"]] = value
    blocks = 1 + max((int(m.group(1)) for name in pairs if (m := _LAYER.search(name))), default=0)
    names = gguf.get_tensor_name_map(arch, blocks)
    writer_rows: list[tuple[str, np.ndarray]] = []
    for module, parts in sorted(pairs.items()):
        gguf_name = names.get_name(f"{module}.weight", try_suffixes=(".weight",))
        if gguf_name is None or set(parts) != {"A", "B"}:
            raise AdapterError(
                f"{setting}={adapter}: {module} has no {architecture} GGUF tensor name"
                if gguf_name is None
                else f"{setting}={adapter}: {module} lacks its lora_A or lora_B weight"
            )
        # A (r, in) and B (out, r) as PEFT stores them: llama.cpp reads them in this layout
        writer_rows.append((f"{gguf_name}.lora_a", np.ascontiguousarray(parts["A"], dtype=np.float32)))
        writer_rows.append((f"{gguf_name}.lora_b", np.ascontiguousarray(parts["B"], dtype=np.float32)))
    with atomic_path(target) as tmp:
        writer = gguf.GGUFWriter(str(tmp), architecture)
        writer.add_string("general.type", "adapter")
        writer.add_string("adapter.type", "lora")
        writer.add_float32("adapter.lora.alpha", alpha)
        for name, array in writer_rows:
            writer.add_tensor(name, array)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
