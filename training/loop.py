"""The per-worker training loop: DeepSpeed engine, sharded questions, checkpoints via Ray Train.

Runs inside Ray Train workers (``TorchTrainer``), which have already set up the process group
(gloo on CPU, NCCL on GPU); ``deepspeed.initialize`` joins it. Every ``checkpoint_every`` steps
each worker writes its DeepSpeed shard into a local directory and ``ray.train.report`` persists
them together as one checkpoint; after a failure (or a re-run of the same command) the loop
resumes from it: engine state, step, epoch and position in the epoch.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from training.config import TrainConfig

STATE_FILE = "trainer_state.json"
DS_TAG = "hoprag"


def deepspeed_config(config: TrainConfig) -> dict[str, Any]:
    """The DeepSpeed config dict for this run."""
    ds = config.deepspeed
    return {
        "train_micro_batch_size_per_gpu": ds.micro_batch_size,
        "gradient_accumulation_steps": ds.gradient_accumulation_steps,
        "gradient_clipping": config.optim.grad_clip,
        "zero_optimization": {"stage": ds.zero_stage},
        "bf16": {"enabled": ds.precision == "bf16"},
        "fp16": {"enabled": ds.precision == "fp16"},
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }


def split_questions(
    rows: list[dict[str, Any]], config: TrainConfig
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Deterministic train/validation split of the usable questions (linked and with gold documents)."""
    usable = [
        r
        for r in rows
        if r["split"] == config.train_split and r["question_entities"] and r["supporting_docs"]
    ]
    order = np.random.default_rng(config.seed).permutation(len(usable))
    n_val = round(len(usable) * config.validation_fraction)
    val = [usable[i] for i in order[:n_val]]
    train = [usable[i] for i in order[n_val:]]
    return train, val


def train_loop_per_worker(params: dict[str, Any]) -> None:
    """Entry point of each Ray Train worker (``params``: config dict, index path, run dir)."""
    import deepspeed
    import ray.train
    import torch

    from hoprag.embedding import SentenceTransformerEmbedder
    from hoprag.glm.backbone import build_backbone, load_tokenizer
    from hoprag.glm.data import build_example, collate
    from hoprag.glm.encoder import GraphT5Encoder
    from hoprag.glm.losses import retrieval_loss
    from hoprag.glm.model import GLMRetrieverModel
    from hoprag.kg.index import KGIndex

    config = TrainConfig.model_validate(params["config"])
    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    torch.manual_seed(config.seed)
    if not config.run.use_gpu:
        torch.set_num_threads(max(1, int(config.run.cpus_per_worker)))

    index = KGIndex(params["index"])
    if index.questions is None:
        raise ValueError(f"{index.path} has no processed questions to train on")
    train_rows, val_rows = split_questions(index.questions.to_pylist(), config)
    if not train_rows:
        raise ValueError(
            f"{index.path}: no '{config.train_split}' questions with linked entities and gold documents"
        )
    shard = train_rows[rank::world]
    tokenizer = load_tokenizer(config.backbone)
    embedder = SentenceTransformerEmbedder(config.glm.question_embedder)
    shard_vectors = embedder.encode([r["question"] for r in shard])

    model = GLMRetrieverModel(
        GraphT5Encoder(build_backbone(config.backbone), config.glm.global_graph, config.glm.with_text),
        embedder.dim,
    )
    optimizer = torch.optim.AdamW(
        model.parameter_groups(config.optim.head_lr, config.optim.backbone_lr),
        weight_decay=config.optim.weight_decay,
    )
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=deepspeed_config(config))
    device = engine.device
    bcfg = model.encoder.backbone.config
    buckets = (bcfg.relative_attention_num_buckets, bcfg.relative_attention_max_distance)

    state = {"epoch": 0, "batch": 0, "step": 0}
    checkpoint = ray.train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as directory:
            engine.load_checkpoint(directory, tag=DS_TAG)
            state = json.loads((Path(directory) / STATE_FILE).read_text())

    micro = config.deepspeed.micro_batch_size
    # Every worker must take the same number of steps (collectives): the smallest shard (the last
    # rank's) decides, so every batch index below is within every worker's shard.
    batches_per_epoch = math.ceil(len(train_rows[world - 1 :: world]) / micro)
    total_steps = config.max_steps or config.epochs * batches_per_epoch
    metrics: dict[str, Any] = {}

    def report(with_checkpoint: bool, extra: dict[str, Any]) -> None:
        payload = {**metrics, **extra, "step": state["step"], "epoch": state["epoch"]}
        if not with_checkpoint:
            ray.train.report(payload)
            return
        with tempfile.TemporaryDirectory() as tmp:
            engine.save_checkpoint(tmp, tag=DS_TAG)
            if rank == 0:
                (Path(tmp) / STATE_FILE).write_text(json.dumps(state))
            ray.train.report(payload, checkpoint=ray.train.Checkpoint.from_directory(tmp))

    started = time.perf_counter()
    tokens_seen = 0
    steps_this_session = 0
    while state["epoch"] < config.epochs and state["step"] < total_steps:
        order = np.random.default_rng(config.seed + state["epoch"]).permutation(len(shard))
        engine.train()
        while state["batch"] < batches_per_epoch and state["step"] < total_steps:
            idx = order[state["batch"] * micro : (state["batch"] + 1) * micro]
            examples = [
                build_example(
                    index,
                    shard[i]["question"],
                    shard[i]["question_entities"],
                    shard_vectors[i],
                    tokenizer,
                    config.glm.sampler,
                    supporting_entities=shard[i]["supporting_entities"],
                )
                for i in idx
            ]
            batch = collate(examples, tokenizer.pad_token_id, *buckets, config.glm.global_graph).to(device)
            logits = engine(batch)
            loss = retrieval_loss(
                logits.float(),
                batch.labels,
                batch.entity_mask,
                config.optim.bce_weight,
                config.optim.list_ce_weight,
            )
            engine.backward(loss)
            engine.step()
            tokens_seen += int(batch.input_ids.numel())
            state["batch"] += 1
            state["step"] += 1
            steps_this_session += 1
            elapsed = time.perf_counter() - started
            metrics = {
                "loss": float(loss.detach()),
                "subgraphs_per_s": steps_this_session * micro * world / elapsed,
                "tokens_per_s": tokens_seen * world / elapsed,
            }
            last = state["step"] >= total_steps
            if state["step"] % config.run.checkpoint_every == 0 and not last:
                report(True, {})
        epoch_done = state["batch"] >= batches_per_epoch
        if epoch_done:
            state["epoch"] += 1
            state["batch"] = 0
        val = (
            _validate(engine.module, index, tokenizer, embedder, val_rows, config)
            if rank == 0 and val_rows
            else {}
        )
        report(True, val)
    if rank == 0:
        from hoprag.glm.retriever import save_retriever

        save_retriever(Path(params["out"]) / "retriever", engine.module, tokenizer, config.glm)


def _validate(
    model: Any, index: Any, tokenizer: Any, embedder: Any, rows: list[dict[str, Any]], config: TrainConfig
) -> dict[str, float]:
    """Recall@2/5 of the current model on the held-out questions (rank 0)."""
    from evaluation.metrics import recall_at_k
    from hoprag.glm.retriever import GLMRetriever
    from hoprag.retrieval.base import RetrievalQuery

    was_training = model.training
    retriever = GLMRetriever(index, model, tokenizer, config.glm, embedder)
    results = retriever.retrieve(
        [RetrievalQuery(r["question"], tuple(r["question_entities"])) for r in rows], k=5
    )
    out = {}
    for k in (2, 5):
        out[f"val_recall@{k}"] = float(
            np.mean(
                [
                    recall_at_k([d.title for d in res.documents], r["supporting_docs"], k)
                    for r, res in zip(rows, results, strict=True)
                ]
            )
        )
    model.train(was_training)
    return out


def worker_env(use_gpu: bool) -> dict[str, str]:
    """Environment for Ray Train workers (DeepSpeed's accelerator must be chosen before import)."""
    env = {"DS_ACCELERATOR": "cuda" if use_gpu else "cpu"}
    for key in ("HF_HUB_OFFLINE", "HOPRAG_CACHE_DIR"):
        if key in os.environ:
            env[key] = os.environ[key]
    env.setdefault("HF_HUB_OFFLINE", "1")
    return env
