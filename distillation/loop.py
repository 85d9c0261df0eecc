"""The per-worker LoRA training loop of ``hoprag distill`` (inside Ray Train ``TorchTrainer``).

Each worker loads the base model, wraps it with a ``peft`` LoRA adapter and trains on its part of
each step's batch: the loss is on the target tokens only (the teacher's answer), never on the prompt.
With several workers the adapter is data-parallel (``prepare_model``: DDP over gloo on CPU, NCCL
on GPU). Every ``checkpoint_every`` steps rank 0 saves the adapter, the optimizer and the step
into a Ray Train checkpoint; after a killed worker (or a re-run of the same command) every worker
resumes from it. Rank 0 finally scores the held-out examples and exports the adapter.
"""

from __future__ import annotations

import json
import logging
import math
import time
from pathlib import Path
from typing import Any

from distillation.config import DistillConfig, LoraSettings
from hoprag.checkpoint_staging import checkpoint_staging
from hoprag.lr_schedule import warmup_linear_factor

logger = logging.getLogger(__name__)

STATE_FILE = "distill_state.json"
OPTIMIZER_FILE = "optimizer.pt"


def read_examples(path: Path) -> list[dict[str, str]]:
    """The JSONL examples the driver wrote (task, key, prompt, target)."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def encode(tokenizer: Any, examples: list[dict[str, str]], max_tokens: int) -> dict[str, Any]:
    """Right-padded ids, attention mask and labels: -100 on prompt tokens and padding, so the
    loss is the teacher's answer alone. An over-long example keeps its prompt's end and target."""
    import torch

    rows, labels = [], []
    for ex in examples:
        prompt = tokenizer(ex["prompt"], add_special_tokens=True)["input_ids"]
        target = tokenizer(ex["target"], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        target = target[: max_tokens // 2]
        prompt = prompt[-(max_tokens - len(target)) :]
        rows.append(prompt + target)
        labels.append([-100] * len(prompt) + target)
    width = max(len(r) for r in rows)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    lab = torch.full((len(rows), width), -100, dtype=torch.long)
    for i, (row, row_labels) in enumerate(zip(rows, labels, strict=True)):
        ids[i, : len(row)] = torch.tensor(row)
        mask[i, : len(row)] = 1
        lab[i, : len(row_labels)] = torch.tensor(row_labels)
    return {"input_ids": ids, "attention_mask": mask, "labels": lab}


def target_loss(model: Any, batch: dict[str, Any]) -> Any:
    """Mean cross-entropy of the target tokens (``model``: a causal LM, bare or wrapped by ``peft``).

    Only the hidden states that predict a target token go through the output layer. Gemma 3's
    262k-token output layer costs as much as the whole body per position, and the prompt's logits
    are never used. A window from the batch's first target position on (``logits_to_keep``) still
    scored every row's padding and the tails of the longer prompts, and allocated the window's
    logits anew every step: on 2 CPU cores the gathered form takes 3.0 s per step against 4.2 for
    the window, with the same loss (docs/bench-models.md, "Distillation step time")."""
    import torch

    causal = model.get_base_model() if hasattr(model, "get_base_model") else model
    device = next(causal.parameters()).device
    labels = batch["labels"].to(device)
    hidden = causal.get_decoder()(
        input_ids=batch["input_ids"].to(device), attention_mask=batch["attention_mask"].to(device)
    ).last_hidden_state
    rows, positions = (labels[:, 1:] != -100).nonzero(as_tuple=True)  # position p predicts token p + 1
    logits = causal.get_output_embeddings()(hidden[rows, positions]).float()
    cap = getattr(causal.config, "final_logit_softcapping", None)
    if cap:  # Gemma 2 caps its logits; Gemma 3 does not
        logits = torch.tanh(logits / cap) * cap
    return torch.nn.functional.cross_entropy(logits, labels[rows, positions + 1])


def output_layer_in(model: Any, dtype: Any) -> None:
    """Give ``model``'s frozen output layer its own weight in ``dtype`` (the autocast dtype).

    Under autocast, a linear layer whose weight does not require grad has it cast anew at every call
    (autocast caches the casts of trainable weights only). Gemma's output layer is its tied 262k×640
    embedding table, so every bf16 step cast 168M weights (335 MB, fresh pages each time) to score a
    few hundred target positions. The matmul sees the same bf16 values either way, so the loss is
    unchanged; the input embedding keeps its fp32 table. A trainable output layer is left alone."""
    import torch

    head = model.get_output_embeddings()
    if head is None or head.weight.requires_grad or head.weight.dtype == dtype:
        return
    head.weight = torch.nn.Parameter(head.weight.detach().to(dtype), requires_grad=False)


def loss_module(model: Any) -> Any:
    """``model`` inside a module whose ``forward(**batch)`` is :func:`target_loss`: what DDP wraps
    when several workers train, since the loss calls the LM's body and output layer directly and DDP
    synchronises gradients only for work done inside its own ``forward``."""
    import torch

    class TargetLoss(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lm = model

        def forward(self, **batch: Any) -> Any:
            return target_loss(self.lm, batch)

    return TargetLoss()


def load_base(config: DistillConfig) -> tuple[Any, Any]:
    """The base causal LM (fp32 for training) and its tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from hoprag.llm.embedded import ensure_converted_checkpoint

    path = config.base.model_path or str(ensure_converted_checkpoint())
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "right"
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    return model, tokenizer


def with_lora(base: Any, lora: LoraSettings) -> Any:
    """``base`` wrapped by ``peft`` with fresh LoRA adapters as ``lora`` says (modules, layers)."""
    from peft import LoraConfig, get_peft_model

    return get_peft_model(
        base,
        LoraConfig(
            r=lora.r,
            lora_alpha=lora.alpha,
            lora_dropout=lora.dropout,
            target_modules=list(lora.target_modules),
            layers_to_transform=lora.layers,
            task_type="CAUSAL_LM",
        ),
    )


def distill_loop_per_worker(params: dict[str, Any]) -> None:
    """Entry point of each Ray Train worker (``params``: config dict, data directory, run dir)."""
    import ray.train
    import torch
    from peft import set_peft_model_state_dict
    from ray.train import Checkpoint
    from safetensors.torch import load_file

    config = DistillConfig.model_validate(params["config"])
    config = config.model_copy(
        update={"optim": config.optim.model_copy(update={"precision": training_precision(config)})}
    )
    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    torch.manual_seed(config.seed)
    if not config.run.use_gpu:
        torch.set_num_threads(max(1, int(config.run.cpus_per_worker)))
    base, tokenizer = load_base(config)
    peft_model = with_lora(base, config.lora)
    dtype = _autocast_dtype(config)
    if dtype is not None:
        output_layer_in(base, dtype)
    optimizer = torch.optim.AdamW(
        [p for p in peft_model.parameters() if p.requires_grad],
        lr=config.optim.learning_rate,
        weight_decay=config.optim.weight_decay,
    )
    state = {"step": 0}
    resumed_from = 0
    checkpoint = ray.train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            set_peft_model_state_dict(peft_model, load_file(str(Path(d) / "adapter_model.safetensors")))
            optimizer.load_state_dict(torch.load(Path(d) / OPTIMIZER_FILE, weights_only=True))
            state = json.loads((Path(d) / STATE_FILE).read_text())
    elif params.get("init_adapter"):  # an absolute directory, resolved by the driver (distillation.job)
        weights = Path(params["init_adapter"]) / "adapter_model.safetensors"
        set_peft_model_state_dict(peft_model, load_file(str(weights)))
    resumed_from = state["step"]
    if rank == 0:  # one line per (re)start of the worker group: where it resumed
        with (Path(params["out"]) / "attempts.jsonl").open("a") as fh:
            fh.write(
                json.dumps({"resumed_from_step": resumed_from, "checkpoint": checkpoint is not None}) + "\n"
            )
    # On the worker's device (the GPU of a GPU run); DDP-wrapped when several workers train.
    model = ray.train.torch.prepare_model(loss_module(peft_model))
    data = Path(params["data"])
    examples = read_examples(data / "train.jsonl")
    if not examples:
        raise ValueError("no training examples: the teacher gave no usable outputs")
    run_dir = Path(params["out"])
    started = time.perf_counter()
    model.train()
    while state["step"] < config.optim.max_steps:
        step = state["step"]
        batch = worker_batch(examples, step, config.optim.batch_size, config.seed, rank, world)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(config, step)
        with _autocast(config):
            loss = model(**encode(tokenizer, batch, config.optim.max_tokens))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.optim.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        state["step"] = step + 1
        if rank == 0:
            from training.loop import write_progress

            write_progress(run_dir, state["step"], config.optim.max_steps, float(loss.item()))
        last = state["step"] == config.optim.max_steps
        if state["step"] % config.run.checkpoint_every == 0 or last:
            metrics = {"step": state["step"], "loss": float(loss.item())}
            metrics["seconds_per_step"] = (time.perf_counter() - started) / max(
                1, state["step"] - resumed_from
            )
            with checkpoint_staging() as staging:
                saved = None
                if rank == 0:
                    peft_model.save_pretrained(str(staging))
                    torch.save(optimizer.state_dict(), staging / OPTIMIZER_FILE)
                    (staging / STATE_FILE).write_text(json.dumps(state))
                    saved = Checkpoint.from_directory(str(staging))
                ray.train.report(metrics, checkpoint=saved)
            started = time.perf_counter()
    if rank == 0:
        held_out = read_examples(data / "held_out.jsonl")
        loss = held_out_loss(peft_model, tokenizer, held_out, config) if held_out else None
        out = run_dir / "adapter"
        out.mkdir(parents=True, exist_ok=True)
        peft_model.save_pretrained(str(out))
        (run_dir / "held_out_metrics.json").write_text(
            json.dumps(
                {
                    "held_out_examples": len(held_out),
                    "held_out_loss": loss,
                    "resumed_from_step": resumed_from,
                    "precision": config.optim.precision,  # what ran: auto decided by the device
                }
            )
        )


def learning_rate(config: DistillConfig, step: int) -> float:
    """Step ``step``'s learning rate: linear warm-up, then linear decay to 10% at ``max_steps``
    (a function of the step alone, so a resumed run continues the same schedule)."""
    optim = config.optim
    return optim.learning_rate * warmup_linear_factor(step, optim.warmup_steps, optim.max_steps, 0.1)


def training_precision(config: DistillConfig) -> str:
    """``bf16`` or ``fp32``: ``auto`` decided by the worker's device, and a warning when bf16 was
    asked for on a CPU that has no bf16 instructions (each step then takes minutes)."""
    from hoprag.machine import cpu_has_native_bf16

    precision = config.optim.precision
    native = config.run.use_gpu or cpu_has_native_bf16()
    if precision == "auto":
        return "bf16" if native else "fp32"
    if precision == "bf16" and not native:
        logger.warning(
            "optim.precision=bf16 on a CPU without AVX512-BF16 or AMX: PyTorch computes bf16 matrix "
            "products in a reference kernel there and a step takes minutes instead of seconds; "
            "--set optim.precision=fp32 (or auto) trains at full speed"
        )
    return precision


def _autocast_dtype(config: DistillConfig) -> Any:
    """The dtype the training precision computes in under autocast (``None``: plain fp32)."""
    import torch

    precision = config.optim.precision
    if precision == "auto":  # the worker resolves it once at start; this is for direct callers
        precision = training_precision(config)
    return None if precision == "fp32" else torch.bfloat16


def _autocast(config: DistillConfig) -> Any:
    import contextlib

    import torch

    dtype = _autocast_dtype(config)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast("cuda" if config.run.use_gpu else "cpu", dtype=dtype)


GROUP_BATCHES = 8  # batches per length-sorted group


def _batch(shard: list[dict[str, str]], step: int, size: int, seed: int) -> list[dict[str, str]]:
    """Step ``step``'s examples (resumable by step). Each epoch is a seeded permutation of the shard
    cut into groups of ``GROUP_BATCHES`` batches; a group is sorted by length before it is cut into
    batches, and the batches are shuffled, so a batch pads little (a 500-token answer prompt does not
    pad three 50-token NER prompts) while every epoch still sees every example once."""
    import numpy as np

    per_epoch = max(1, math.ceil(len(shard) / size))
    epoch, position = divmod(step, per_epoch)
    rng = np.random.default_rng(seed + epoch)
    order = [int(i) for i in rng.permutation(len(shard))]
    group = size * GROUP_BATCHES
    batches: list[list[int]] = []
    for start in range(0, len(order), group):
        chunk = sorted(
            order[start : start + group], key=lambda i: len(shard[i]["prompt"]) + len(shard[i]["target"])
        )
        batches += [chunk[j : j + size] for j in range(0, len(chunk), size)]
    picked = batches[int(rng.permutation(len(batches))[position])]
    return [shard[i] for i in picked]


def worker_batch(
    examples: list[dict[str, str]], step: int, size: int, seed: int, rank: int, world: int
) -> list[dict[str, str]]:
    """Worker ``rank``'s ``size`` examples of step ``step``: every step cuts one global batch of
    ``size * world`` examples of similar length (:func:`_batch`) and deals it out, so the workers of a
    step get the same length class and none waits at the gradient all-reduce for another's long batch
    (with a shard per worker, one worker's 500-token answer prompts met another's 50-token NER
    prompts in the same step). One worker batches exactly as :func:`_batch`. A short last batch of
    an epoch is dealt round-robin, so no worker is left without an example."""
    batch = _batch(examples, step, size * world, seed)
    return batch[rank::world] or [batch[rank % len(batch)]]


def held_out_loss(model: Any, tokenizer: Any, examples: list[dict[str, str]], config: DistillConfig) -> float:
    """Mean per-example loss on the teacher's answers of the held-out examples. The examples are
    scored in length order under the training precision, so a batch pads little (a 400-token answer
    prompt does not pad three NER prompts) and the closing evaluation stays a small part of the run."""
    import torch

    model.eval()
    ordered = sorted(examples, key=lambda ex: len(ex["prompt"]) + len(ex["target"]))
    losses = []
    with torch.no_grad(), _autocast(config):
        for start in range(0, len(ordered), config.optim.batch_size):
            batch = ordered[start : start + config.optim.batch_size]
            losses.append(
                float(target_loss(model, encode(tokenizer, batch, config.optim.max_tokens))) * len(batch)
            )
    return round(sum(losses) / len(examples), 4)
