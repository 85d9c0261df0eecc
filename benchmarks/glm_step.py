"""``hoprag bench glm-step``: one GLM training step at the paper's size: step time, peak memory, MFU.

The GLM-RAG paper trains its GLM on ``t5-large`` with 600-triple subgraphs. This measures that
step on one accelerator, in one process: the model's forward, the retrieval loss, the backward and
AdamW (the Ray Train / DeepSpeed job adds the gradient all-reduce between workers, which one
device does not have). What it needs is torch, transformers and hoprag's GLM modules, not Ray.

- **Model**: :class:`~hoprag.glm.encoder.GraphT5Encoder` over a ``T5EncoderModel`` of the named
  size with random weights (a step's cost does not depend on the values; no download), the GLM
  head and question projection of :class:`~hoprag.glm.model.GLMRetrieverModel`.
- **Data**: subgraphs of the asked budget sampled from a dense random KG (two hops from two seeds
  hold more than 600 triples) by hoprag's sampler, Levi-encoded with the shipped GLM's tokenizer,
  collated as training collates them; random labels (10% positives).
- **Precisions**: ``bf16`` is autocast with fp32 master weights (what DeepSpeed's bf16 mode
  computes in); ``fp32`` (TF32 off) is the same-run baseline. The bf16 settings run again with the
  attention bias built as before 2026-12-04 (float32, heads-last layout: SDPA's unfused path), the
  baseline of that change.
- **Activation checkpointing**: off, then on (HF's per-layer checkpointing): without it a
  t5-large step at ~4,500 tokens keeps every layer's ``(heads, N, N)`` attention for the backward.
  A setting that runs out of memory is reported as such, not skipped silently.
- **MFU** = model FLOPs per step / step time / peak. Model FLOPs are the forward's, counted by
  ``torch.utils.flop_counter`` (every matrix product, attention included), times 3 (the backward
  costs two forwards; recomputation under checkpointing is not counted, as MFU conventions say).
  Peak: the datasheet's dense bf16 figure where the device is known, and the rate of a large bf16
  matrix product measured in the same run (what this device reaches at best).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import numpy as np

from benchmarks.harness import publish, time_call

# T5 v1.0 encoder shapes (Raffel et al. 2020, Table 14): d_model, d_ff, layers, heads, d_kv.
T5_SIZES: dict[str, tuple[int, int, int, int, int]] = {
    "tiny": (64, 128, 2, 2, 32),  # tests
    "t5-small": (512, 2048, 6, 8, 64),
    "t5-base": (768, 3072, 12, 12, 64),
    "t5-large": (1024, 4096, 24, 16, 64),
}
T5_VOCAB = 32128
# Dense bf16 tensor-core peak by device name (NVIDIA datasheets, SXM parts, without sparsity).
DATASHEET_BF16_TFLOPS = {"H200": 989.4, "H100": 989.4, "A100": 312.0}
QUESTION_DIM = 768  # the paper's question encoder (all-mpnet-base-v2)


def t5_graph_model(size: str, dropout: float = 0.1) -> Any:
    """A GLM on a randomly initialised T5 encoder of ``size`` (``T5_SIZES``)."""
    from transformers import T5Config, T5EncoderModel

    from hoprag.glm.encoder import GraphT5Encoder
    from hoprag.glm.model import GLMRetrieverModel

    d_model, d_ff, layers, heads, d_kv = T5_SIZES[size]
    config = T5Config(
        vocab_size=T5_VOCAB,
        d_model=d_model,
        d_ff=d_ff,
        num_layers=layers,
        num_heads=heads,
        d_kv=d_kv,
        feed_forward_proj="relu",
        dropout_rate=dropout,
        relative_attention_num_buckets=32,
        relative_attention_max_distance=128,
    )
    return GLMRetrieverModel(GraphT5Encoder(T5EncoderModel(config), name=size), QUESTION_DIM)


def random_batches(
    count: int, batch_size: int, max_triplets: int, seed: int = 0, pad_to_multiple_of: int = 1
) -> tuple[list[Any], list[int]]:
    """``count`` collated batches of ``batch_size`` subgraphs of ``max_triplets`` triples each
    (:func:`benchmarks.train.random_training_batches`, the shipped GLM's tokenizer, the paper's
    question width), and every subgraph's token count."""
    from transformers import AutoTokenizer

    from benchmarks.train import random_training_batches
    from hoprag.paths import PACKAGED_GLM

    tokenizer = AutoTokenizer.from_pretrained(PACKAGED_GLM / "retriever" / "tokenizer")
    return random_training_batches(
        count, batch_size, max_triplets, tokenizer, QUESTION_DIM, seed, pad_to_multiple_of
    )


def matmul_peak_tflops(device: str, size: int = 8192, repeats: int = 10) -> float:
    """TFLOP/s of a ``size``³ bf16 matrix product on ``device`` (median of ``repeats`` after 3 warm-ups)."""
    import torch

    a = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    b = torch.randn(size, size, device=device, dtype=torch.bfloat16)

    def product() -> None:
        a @ b
        _synchronize(device)

    return 2 * size**3 / time_call(product, warmup=3, repeat=repeats).median / 1e12


def forward_flops(model: Any, batch: Any, precision: str, device: str) -> int:
    """FLOPs of one forward of ``model`` on ``batch`` (torch's FLOP counter; matrix products)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with torch.no_grad(), _autocast(precision, device), counter:
        model(batch)
    return int(counter.get_total_flops())


def measure_step(
    model: Any, batches: Sequence[Any], precision: str, checkpointing: bool, warmup: int, device: str
) -> dict[str, Any]:
    """Median seconds of a training step (forward, loss, backward, AdamW) over ``batches`` after
    ``warmup`` untimed steps, and the peak memory the steps allocated."""
    import torch

    from hoprag.glm.losses import retrieval_loss

    model.encoder.set_activation_checkpointing(checkpointing)
    model.train()
    optimizer = torch.optim.AdamW(model.parameter_groups(5e-4, 1e-4), fused=device.startswith("cuda"))
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    seconds = []
    try:
        for i, batch in enumerate(batches):
            started = time.perf_counter()
            with _autocast(precision, device):
                loss = retrieval_loss(model(batch), batch.labels, batch.entity_mask)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            _synchronize(device)
            if i >= warmup:
                seconds.append(time.perf_counter() - started)
    except torch.OutOfMemoryError as exc:
        return {"out_of_memory": str(exc).split("\n")[0][:300]}
    finally:
        del optimizer
        model.zero_grad(set_to_none=True)
    out: dict[str, Any] = {"median_s": float(np.median(seconds)), "steps_timed": len(seconds)}
    if device.startswith("cuda"):
        out["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    return out


def run_glm_step_benchmark(args: argparse.Namespace) -> int:
    """Entry point of ``hoprag bench glm-step`` (also ``python -m benchmarks.glm_step``)."""
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32
    torch.manual_seed(0)
    batches, tokens = random_batches(
        args.warmup + args.steps,
        args.batch_size,
        args.max_triplets,
        pad_to_multiple_of=args.pad_to_multiple_of,
    )
    batches = [b.to(device) for b in batches]
    model = t5_graph_model(args.size).to(device)
    name = torch.cuda.get_device_name() if device.startswith("cuda") else "cpu"
    result: dict[str, Any] = {
        "device": name,
        "torch": torch.__version__,
        "size": args.size,
        "parameters": sum(p.numel() for p in model.parameters()),
        "batch_size": args.batch_size,
        "max_triplets": args.max_triplets,
        "mean_tokens": round(float(np.mean(tokens)), 1),
        "max_tokens": int(max(tokens)),
        "padded_tokens": int(batches[0].input_ids.shape[1]),
        "peak_tflops": {
            "datasheet_bf16": next((v for k, v in DATASHEET_BF16_TFLOPS.items() if k in name), None),
            "measured_bf16_matmul": round(matmul_peak_tflops(device), 1)
            if device.startswith("cuda")
            else None,
        },
        "steps": {},
    }
    # FLOPs count matrix products by shape, the same in every precision: counted once, in fp32
    model_flops = 3 * float(
        np.median([forward_flops(model, b, "fp32", device) for b in batches[args.warmup :]])
    )
    settings = [(p, c, False) for p in args.precisions for c in args.checkpointing]
    if "bf16" in args.precisions and args.bias_baseline:
        settings += [("bf16", c, True) for c in args.checkpointing]
    profiled = False
    for precision, checkpointing, bias_as_before in settings:
        with _bias_as_before(model) if bias_as_before else nullcontext():
            step = measure_step(model, batches, precision, checkpointing, args.warmup, device)
            if "median_s" in step and args.profile and not profiled and device.startswith("cuda"):
                step["top_kernels"] = profile_step(model, batches[-1], precision)
                profiled = True
        if "median_s" in step:
            step["model_tflop_per_step"] = round(model_flops / 1e12, 3)
            achieved = model_flops / step["median_s"] / 1e12
            step["achieved_tflops"] = round(achieved, 1)
            step["mfu"] = {
                peak: round(achieved / value, 3) for peak, value in result["peak_tflops"].items() if value
            }
        label = f"{precision}, checkpointing {'on' if checkpointing else 'off'}"
        result["steps"][label + (", bias as before" if bias_as_before else "")] = step
        print(json.dumps({"setting": label, "bias_as_before": bias_as_before, **step}), flush=True)
    publish("glm-step", result, args)
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``hoprag bench glm-step``."""
    parser.add_argument("--size", choices=sorted(T5_SIZES), default="t5-large", help="T5 encoder size")
    parser.add_argument("--batch-size", type=int, default=2, help="subgraphs per step (the paper's: 2)")
    parser.add_argument("--max-triplets", type=int, default=600, help="subgraph budget (the paper's: 600)")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per setting")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first, per setting")
    parser.add_argument(
        "--precisions", nargs="+", choices=("bf16", "fp32"), default=["bf16", "fp32"], help="in this order"
    )
    parser.add_argument(
        "--checkpointing",
        nargs="+",
        type=lambda v: {"off": False, "on": True}[v],
        default=[False, True],
        metavar="{off,on}",
        help="activation checkpointing settings to measure (default: off on)",
    )
    parser.add_argument(
        "--device", default=None, help="torch device (default: cuda where available, else cpu)"
    )
    parser.add_argument(
        "--no-bias-baseline",
        dest="bias_baseline",
        action="store_false",
        help="skip the bf16 settings again with the attention bias built as before 2026-12-04",
    )
    parser.add_argument(
        "--profile", action="store_true", help="on a GPU: the top kernels of the first setting that runs"
    )
    parser.add_argument(
        "--pad-to-multiple-of", type=int, default=1, help="pad each batch's token axis to a multiple of this"
    )
    parser.add_argument("--json", action="store_true", help="the result as one line of JSON")


def profile_step(model: Any, batch: Any, precision: str, top: int = 12) -> list[dict[str, Any]]:
    """The ``top`` GPU kernels of one training step by their own time, with their share of it."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from hoprag.glm.losses import retrieval_loss

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        with _autocast(precision, "cuda"):
            loss = retrieval_loss(model(batch), batch.labels, batch.entity_mask)
        loss.backward()
        torch.cuda.synchronize()
    model.zero_grad(set_to_none=True)
    events = [
        (e.key, getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0))
        for e in prof.key_averages()
    ]
    total = sum(t for _, t in events) or 1
    events.sort(key=lambda kv: -kv[1])
    return [
        {"kernel": k[:120], "ms": round(t / 1000, 1), "share": round(t / total, 3)} for k, t in events[:top]
    ]


@contextmanager
def _bias_as_before(model: Any) -> Iterator[None]:
    """The attention bias as hoprag built it before 2026-12-04, the baseline of the bf16 settings:
    float32 whatever the compute dtype, and the table's ``(B, N, N, H)`` lookup only permuted to
    ``(B, H, N, N)`` (its last axis strided), which keeps SDPA off its fused kernels."""
    import torch

    encoder = model.encoder
    table = encoder.backbone.encoder.block[0].layer[0].SelfAttention.relative_attention_bias

    def before(buckets: Any, mask: Any, dtype: Any) -> Any:
        bias = table(buckets).permute(0, 3, 1, 2).to(torch.float32)
        return bias + (~mask).unsqueeze(1).to(torch.float32) * torch.finfo(torch.float32).min

    encoder.attention_bias = before
    try:
        yield
    finally:
        del encoder.attention_bias  # the class's method again


def _autocast(precision: str, device: str) -> Any:
    import torch

    return torch.autocast(device.split(":")[0], dtype=torch.bfloat16, enabled=precision == "bf16")


def _synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


if __name__ == "__main__":
    cli = argparse.ArgumentParser(prog="python -m benchmarks.glm_step", description=__doc__.split("\n")[0])
    add_arguments(cli)
    raise SystemExit(run_glm_step_benchmark(cli.parse_args()))
