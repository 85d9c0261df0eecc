"""``hoprag bench glm-step``: the paper-size GLM training step benchmark, at a tiny size on CPU."""

from __future__ import annotations

import json

import pytest
import torch

from benchmarks.glm_step import measure_step, random_batches, t5_graph_model
from hoprag_cli import main


def test_the_step_bench_times_every_setting_and_counts_model_flops(capsys):
    argv = ["bench", "glm-step", "--size", "tiny", "--max-triplets", "30", "--steps", "1", "--warmup", "1"]
    assert main([*argv, "--device", "cpu", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["size"] == "tiny" and result["batch_size"] == 2 and result["mean_tokens"] > 100
    settings = {f"{p}, checkpointing {c}" for p in ("bf16", "fp32") for c in ("off", "on")}
    baselines = {f"bf16, checkpointing {c}, bias as before" for c in ("off", "on")}
    assert set(result["steps"]) == settings | baselines
    for step in result["steps"].values():
        assert step["median_s"] > 0 and step["steps_timed"] == 1
        assert step["model_tflop_per_step"] > 0
    assert result["peak_tflops"] == {"datasheet_bf16": None, "measured_bf16_matmul": None}  # a CPU


def test_a_setting_that_runs_out_of_memory_is_reported_not_raised(monkeypatch):
    model = t5_graph_model("tiny")
    batches, _ = random_batches(1, 1, 10)

    def out_of_memory(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 96.00 GiB")

    monkeypatch.setattr(model.encoder, "forward", out_of_memory)
    step = measure_step(model, batches, "bf16", checkpointing=False, warmup=0, device="cpu")
    assert step == {"out_of_memory": "CUDA out of memory. Tried to allocate 96.00 GiB"}


def test_unknown_sizes_are_refused(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "glm-step", "--size", "t5-huge"])
