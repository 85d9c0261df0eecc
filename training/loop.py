"""The per-worker training loop: DeepSpeed engine, encoded subgraphs, checkpoints via Ray Train.

Runs inside Ray Train workers (``TorchTrainer``), which have already set up the process group
(gloo on CPU, NCCL on GPU); ``deepspeed.initialize`` joins it. Training examples come from the
run's epoch plans (:mod:`training.data`): streamed from the Ray Data dataset shard
``ray.train.get_dataset_shard("train")`` (``data.streaming``) or encoded by the worker itself.
Every ``checkpoint_every`` steps each worker writes its DeepSpeed shard into a local directory
and ``ray.train.report`` persists them together as one checkpoint; after a failure (or a re-run
of the same command) the loop resumes from it: engine state, step, epoch and position in the
epoch (streaming: the batches of the stream before that position are read and dropped).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from hoprag.atomic import atomic_write_json
from hoprag.checkpoint_staging import checkpoint_staging
from hoprag.lr_schedule import warmup_linear_factor
from training.config import TrainConfig
from training.data import EpochGeometry, examples_from_columns
from training.families import family_of
from training.question_vectors import PrecomputedQuestionEmbedder, question_embedder_config
from training.trainset import TrainSet, mean_recall, sources_from_params, validation_queries

STATE_FILE = "trainer_state.json"
DS_TAG = "hoprag"
# Rank 0 rewrites RUN_DIR/progress.json after each step; the driver shows it as a progress bar.
PROGRESS_FILE = "progress.json"
# Rank 0 appends every validation (step, epoch, val_recall@K[/INDEX]) here: the validation curve.
VALIDATION_FILE = "validation.jsonl"


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


def train_loop_per_worker(params: dict[str, Any]) -> None:
    """Entry point of each Ray Train worker (``params``: config dict, the indexes, run dir):
    set up, resume from the last checkpoint, train epoch by epoch (validating and checkpointing
    after each), export the retriever."""
    session = WorkerSession.setup(params)
    session.resume()
    while session.has_work():
        session.train_epoch()
        session.end_epoch()
    session.export()


class WorkerSession:
    """One Ray Train worker's training run, in named phases; ``state`` is what a checkpoint resumes."""

    def __init__(self, params: dict[str, Any], config: TrainConfig, rank: int, world: int) -> None:
        self.params = params
        self.config = config
        self.rank, self.world = rank, world
        self.state: dict[str, Any] = {"epoch": 0, "batch": 0, "step": 0}
        self.metrics: dict[str, Any] = {}
        self.started = time.perf_counter()
        self.tokens_seen = 0
        self.steps_this_session = 0

    @classmethod
    def setup(cls, params: dict[str, Any]) -> WorkerSession:
        """Load the indexes and their questions (where this worker encodes or validates), the
        run's question vectors, the tokenizer and model (built fresh, or with ``init`` the exported
        retriever's) and its DeepSpeed engine."""
        import deepspeed
        import ray
        import ray.train
        import torch

        config = TrainConfig.model_validate(params["config"])
        ctx = ray.train.get_context()
        self = cls(params, config, ctx.get_world_rank(), ctx.get_world_size())
        torch.manual_seed(config.seed)
        if not config.run.use_gpu:
            torch.set_num_threads(max(1, int(config.run.cpus_per_worker)))

        self.sources = sources_from_params(params)
        # Streaming, only rank 0 (validation) needs the indexes; in memory every worker encodes.
        self.trainset = (
            TrainSet(self.sources, config) if self.rank == 0 or not config.data.streaming else None
        )
        self.family = family_of(config)
        # The driver encoded the run's questions (training.question_vectors): no model load here.
        self.embedder = PrecomputedQuestionEmbedder(
            ray.get(params["question_vectors"]), question_embedder_config(config)
        )

        if config.init is not None:  # warm start (GLM): an exported retriever's network and tokenizer
            from training.warm_start import warm_start_model

            model, self.resources = warm_start_model(
                config.init, self.embedder.dim, config.backbone.attention_dropout
            )
        else:
            model, self.resources = self.family.build_model(config, self.embedder.dim)
        if config.deepspeed.activation_checkpointing:
            model.encoder.set_activation_checkpointing(True)
        self.optimizer = torch.optim.AdamW(
            model.parameter_groups(config.optim.head_lr, config.optim.backbone_lr),
            weight_decay=config.optim.weight_decay,
        )
        # The schedule scales these; DeepSpeed's ZeRO wrappers step this optimizer's own groups.
        self.base_lrs = [float(group["lr"]) for group in self.optimizer.param_groups]
        self.engine, _, _, _ = deepspeed.initialize(
            model=model, optimizer=self.optimizer, config=deepspeed_config(config)
        )
        # Every worker must take the same number of steps (collectives): an epoch is a whole number
        # of steps of every worker (training.data.EpochGeometry).
        self.micro = config.deepspeed.micro_batch_size
        self.geometry = EpochGeometry.of(sum(s.n_train for s in self.sources), self.world, self.micro)
        self.batches_per_epoch = self.geometry.batches_per_epoch
        self.total_steps = total_steps(config, self.batches_per_epoch)
        self.seen = np.zeros(len(self.sources), dtype=np.int64)  # examples this session, this worker
        self.seen_before = np.zeros(len(self.sources), dtype=np.int64)  # all workers, earlier sessions
        return self

    def resume(self) -> None:
        """Continue from Ray Train's latest checkpoint, if any: engine state, step, epoch, batch."""
        import ray.train

        checkpoint = ray.train.get_checkpoint()
        if checkpoint is not None:
            with checkpoint.as_directory() as directory:
                self.engine.load_checkpoint(directory, tag=DS_TAG)
                self.state = json.loads((Path(directory) / STATE_FILE).read_text())
        if "examples" in self.state:
            self.seen_before = np.asarray(self.state["examples"], dtype=np.int64)
        self.batches = self.stream_batches() if self.config.data.streaming else self.memory_batches()

    def stream_batches(self) -> Iterator[tuple[Any, list[Any]]]:
        """``(index ids, examples)`` micro-batches of this worker's shard of the streamed dataset.

        The dataset starts at epoch ``params["first_epoch"]`` (the driver's resume point); on resume
        the batches this worker consumed since then are read and dropped (encoded again by the map
        stage, not trained on). Which rows a worker reads is up to Ray Data's split, so the
        dropped batches hold the same number of rows as were trained on, not necessarily the same rows.
        """
        import ray.train

        from training.data import iter_stream

        skip = (self.state["epoch"] - self.params["first_epoch"]) * self.batches_per_epoch + self.state[
            "batch"
        ]
        shard = ray.train.get_dataset_shard("train")
        for batch in iter_stream(shard, self.micro, max(0, skip)):
            yield batch["index"], examples_from_columns(batch, self.config)

    def memory_batches(self) -> Iterator[tuple[Any, list[Any]]]:
        """``(index ids, examples)`` micro-batches this worker samples and encodes itself: its rows
        ``plan[rank::world]`` of each epoch's plan, from the current position on."""
        from training.data import encode_rows, worker_plan

        assert self.trainset is not None
        epoch, batch = self.state["epoch"], self.state["batch"]
        while True:
            plan = worker_plan(self.sources, self.config, epoch, self.geometry, self.rank, self.world)
            for b in range(batch, self.batches_per_epoch):
                pairs = [(int(i), int(r)) for i, r in plan[b * self.micro : (b + 1) * self.micro]]
                columns = encode_rows(self.trainset, pairs, self.resources, self.embedder, self.config)
                yield np.asarray(columns["index"]), examples_from_columns(columns, self.config)
            epoch, batch = epoch + 1, 0

    def has_work(self) -> bool:
        return self.state["epoch"] < self.config.epochs and self.state["step"] < self.total_steps

    def train_epoch(self) -> None:
        """The rest of the current epoch (or up to the step budget), checkpointing every
        ``run.checkpoint_every`` steps except the last."""
        self.engine.train()
        while self.state["batch"] < self.batches_per_epoch and self.state["step"] < self.total_steps:
            try:
                index_ids, examples = next(self.batches)
            except StopIteration:
                raise RuntimeError(
                    f"the training stream ended at step {self.state['step']} of {self.total_steps}"
                ) from None
            self.train_step(examples, index_ids)
            last = self.state["step"] >= self.total_steps
            if self.state["step"] % self.config.run.checkpoint_every == 0 and not last:
                self.checkpoint()

    def train_step(self, examples: list[Any], index_ids: Any) -> None:
        """One optimizer step on a micro-batch of encoded examples (``index_ids``: their indexes)."""
        from hoprag.glm.losses import retrieval_loss

        config = self.config
        self.seen += np.bincount(np.asarray(index_ids, dtype=np.int64), minlength=len(self.sources))
        batch = self.family.collate(examples, self.engine.module, self.resources, config)
        batch = batch.to(self.engine.device)
        logits = self.engine(batch)
        loss = retrieval_loss(
            logits.float(),
            batch.labels,
            batch.entity_mask,
            config.optim.bce_weight,
            config.optim.list_ce_weight,
        )
        self.engine.backward(loss)
        lr_factor = self.set_learning_rates()
        self.engine.step()
        # GLM inputs are tokens; the GNN's nodes are not, and it reports no token rate.
        input_ids = getattr(batch, "input_ids", None)
        self.tokens_seen += int(input_ids.numel()) if input_ids is not None else 0
        self.state["batch"] += 1
        self.state["step"] += 1
        self.steps_this_session += 1
        elapsed = time.perf_counter() - self.started
        self.metrics = {
            "loss": float(loss.detach()),
            "lr_factor": lr_factor,
            "subgraphs_per_s": self.steps_this_session * self.micro * self.world / elapsed,
        }
        if input_ids is not None:
            self.metrics["tokens_per_s"] = self.tokens_seen * self.world / elapsed
        if self.rank == 0:
            write_progress(
                Path(self.params["out"]), self.state["step"], self.total_steps, self.metrics["loss"]
            )

    def set_learning_rates(self) -> float:
        """Scale every parameter group's rate for the coming optimizer step (``optim.lr_schedule``,
        a function of the step alone: a resumed run continues the curve); returns the factor."""
        optim = self.config.optim
        factor = 1.0
        if optim.lr_schedule == "warmup_linear":
            factor = warmup_linear_factor(
                self.state["step"], optim.warmup_steps, self.total_steps, optim.final_lr_fraction
            )
        for group, base in zip(self.optimizer.param_groups, self.base_lrs, strict=True):
            group["lr"] = base * factor
        return factor

    def end_epoch(self) -> None:
        """Close a finished epoch, validate (rank 0) and checkpoint with the validation metrics."""
        if self.state["batch"] >= self.batches_per_epoch:
            self.state["epoch"] += 1
            self.state["batch"] = 0
        metrics = self.validate() if self.rank == 0 else {}
        if metrics:
            append_validation(Path(self.params["out"]), self.state["step"], self.state["epoch"], metrics)
        self.checkpoint(metrics)

    def validate(self) -> dict[str, float]:
        """Recall@2/5 of the current model on each index's held-out questions
        (``val_recall@K/NAME``) and their mean over the indexes that have some (``val_recall@K``)."""
        assert self.trainset is not None
        out: dict[str, float] = {}
        per_index: dict[int, list[float]] = {2: [], 5: []}
        model = self.engine.module
        was_training = model.training  # a retriever puts its model in eval mode
        for source, index, rows in zip(self.sources, self.trainset.indexes, self.trainset.val, strict=True):
            if not rows:
                continue
            metrics = _validate(
                self.family.retriever(index, model, self.resources, self.config, self.embedder), rows
            )
            for k in (2, 5):
                out[f"val_recall@{k}/{source.name}"] = metrics[f"val_recall@{k}"]
                per_index[k].append(metrics[f"val_recall@{k}"])
            out.update({f"{key}/{source.name}": v for key, v in metrics.items() if "/ranker=" in key})
        model.train(was_training)
        for k, values in per_index.items():
            if values:
                out[f"val_recall@{k}"] = float(np.mean(values))
        return out

    def example_counts(self) -> np.ndarray:
        """Training examples drawn from each index so far, all workers and sessions (a collective)."""
        import torch
        import torch.distributed as dist

        # a copy: all_reduce works in place, and as_tensor would share self.seen's memory
        counts = torch.tensor(self.seen, dtype=torch.int64, device=self.engine.device)
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(counts)
        return self.seen_before + counts.cpu().numpy()

    def checkpoint(self, extra: dict[str, Any] | None = None) -> None:
        """Report metrics to Ray Train with every worker's DeepSpeed shard as one checkpoint."""
        import ray.train

        counts = self.example_counts()
        self.state["examples"] = [int(c) for c in counts]
        payload = {
            **self.metrics,
            **(extra or {}),
            **{f"examples/{s.name}": int(c) for s, c in zip(self.sources, counts, strict=True)},
            "step": self.state["step"],
            "epoch": self.state["epoch"],
        }
        with checkpoint_staging() as staging:
            self.engine.save_checkpoint(str(staging), tag=DS_TAG)
            if self.rank == 0:
                (staging / STATE_FILE).write_text(json.dumps(self.state))
            ray.train.report(payload, checkpoint=ray.train.Checkpoint.from_directory(str(staging)))

    def export(self) -> None:
        """Rank 0 writes the servable retriever directory (RUN_DIR/retriever) with the document
        ranker that the run's last validation scored best (:mod:`training.rankers`)."""
        if self.rank != 0:
            return
        from training.rankers import best_ranker, last_validation

        out = Path(self.params["out"])
        settings = self.family.settings(self.config)
        ranker = best_ranker(last_validation(out / VALIDATION_FILE), settings.doc_ranker)
        config = self.config.model_copy(
            update={self.family.name: settings.model_copy(update={"doc_ranker": ranker})}
        )
        self.family.export(
            out / "retriever", self.engine.module, self.resources, config, self.params.get("init")
        )


def _validate(retriever: Any, rows: list[dict[str, Any]]) -> dict[str, float]:
    """Recall@2/5 of ``retriever`` on the held-out questions ``rows`` (``val_recall@K``: with its
    own document ranker), and with each document ranker (``val_recall@K/ranker=NAME``: the entities
    are scored once), so the curve says which ranker suits the model (docs/glm.md §8)."""
    from hoprag.retrieval.subgraph import retrieve_by_each_ranker
    from training.rankers import ranker_metric

    by_ranker = retrieve_by_each_ranker(retriever, validation_queries(rows), k=5)
    out = {}
    for ranker, results in by_ranker.items():
        for k in (2, 5):
            recall = mean_recall(rows, results, k)
            out[ranker_metric(k, ranker)] = recall
            if ranker == retriever.settings.doc_ranker:
                out[f"val_recall@{k}"] = recall
    return out


def total_steps(config: TrainConfig, batches_per_epoch: int) -> int:
    """The run's optimizer steps: ``max_steps`` or every epoch."""
    return config.max_steps or config.epochs * batches_per_epoch


def append_validation(run_dir: Path, step: int, epoch: int, metrics: dict[str, float]) -> None:
    """Add one validation to RUN_DIR/validation.jsonl: the run's validation curve (Ray Train keeps
    metrics only with the checkpoints it retains). A run resumed after a failure validates the
    interrupted epoch again, so a step can appear twice; the later line is the one checkpointed."""
    line = json.dumps({"step": step, "epoch": epoch, **metrics}, sort_keys=True)
    with (run_dir / VALIDATION_FILE).open("a", encoding="utf-8") as f:
        f.write(line + "\n")


def write_progress(run_dir: Path, step: int, total_steps: int, loss: float) -> None:
    """Atomically replace ``run_dir/progress.json`` (read by the driver's progress bar)."""
    atomic_write_json(run_dir / PROGRESS_FILE, {"step": step, "total_steps": total_steps, "loss": loss})


def read_progress(run_dir: Path) -> dict[str, Any] | None:
    """What rank 0 last wrote to ``run_dir/progress.json`` (None before the first step)."""
    try:
        return json.loads((run_dir / PROGRESS_FILE).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def worker_env(use_gpu: bool) -> dict[str, str]:
    """Environment for Ray Train workers (DeepSpeed's accelerator must be chosen before import)."""
    env = {"DS_ACCELERATOR": "cuda" if use_gpu else "cpu"}
    for key in ("HF_HUB_OFFLINE", "HOPRAG_CACHE_DIR"):
        if key in os.environ:
            env[key] = os.environ[key]
    env.setdefault("HF_HUB_OFFLINE", "1")
    return env
