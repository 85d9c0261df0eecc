"""``hoprag train``: a Ray Train ``TorchTrainer`` around :func:`training.loop.train_loop_per_worker`.

Fault tolerance: ``FailureConfig(max_failures)`` restarts the worker group from the latest
checkpoint after a worker or node dies; re-running the same command (same ``--out``) resumes the
same run from its latest checkpoint, because the run name and storage path are derived from it.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from hoprag.config import dump_config
from hoprag.ray_runtime import RayConfig, init_ray
from training.config import RunSettings, TrainConfig
from training.loop import PROGRESS_FILE, read_progress, train_loop_per_worker, worker_env
from training.warm_start import remember_init, resolve_init

RUN_NAME = "glm"


def run_training(
    index_dir: Path, out: Path, config: TrainConfig, ray_config: RayConfig | None = None
) -> dict[str, Any]:
    """Train, checkpoint and export ``out/retriever``; returns the final metrics. With
    ``config.init`` the model starts from that exported retriever (:mod:`training.warm_start`,
    checked here before Ray starts; :class:`~training.warm_start.InitError` if unusable)."""
    from ray.train.torch import TorchTrainer

    out = Path(out).resolve()
    init = None
    if config.init is not None:
        config, init = resolve_init(config, out)
    remember_init(out, init)
    out.mkdir(parents=True, exist_ok=True)
    (out / "train_config.yaml").write_text(dump_config(config))
    init_ray(ray_config)
    trainer = TorchTrainer(
        train_loop_per_worker,
        train_loop_config={
            "config": config.model_dump(mode="json"),
            "index": str(Path(index_dir).resolve()),
            "out": str(out),
            "init": init,
        },
        **trainer_options(config.run, RUN_NAME, out),
    )
    result = fit_with_progress(trainer, out, "GLM training")
    metrics = dict(result.metrics or {})
    if init is not None:
        metrics["init"] = init
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, default=str))
    return metrics


def trainer_options(run: RunSettings, name: str, out: Path) -> dict[str, Any]:
    """The ``TorchTrainer`` keywords a run's settings give (backend, workers, storage, failures,
    checkpoints, worker environment): shared by GLM training and distillation."""
    from ray.train import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig

    return {
        "torch_config": TorchConfig(backend="nccl" if run.use_gpu else "gloo"),
        "scaling_config": ScalingConfig(
            num_workers=run.num_workers,
            use_gpu=run.use_gpu,
            resources_per_worker={"CPU": run.cpus_per_worker},
        ),
        "run_config": RunConfig(
            name=name,
            storage_path=run.storage_path or str(out / "ray"),
            failure_config=FailureConfig(max_failures=run.max_failures),
            checkpoint_config=CheckpointConfig(num_to_keep=run.keep_checkpoints),
            worker_runtime_env={"env_vars": worker_env(run.use_gpu)},
        ),
    }


def fit_with_progress(trainer: Any, out: Path, label: str) -> Any:
    """``trainer.fit()`` with a progress bar of the steps rank 0 reports in ``out/progress.json``
    (removed first, so the bar counts this run's steps only)."""
    (out / PROGRESS_FILE).unlink(missing_ok=True)
    stop = threading.Event()
    watcher = threading.Thread(target=show_progress, args=(out, stop, label), daemon=True)
    watcher.start()
    try:
        return trainer.fit()
    finally:
        stop.set()
        watcher.join(timeout=10)


def show_progress(
    run_dir: Path, stop: threading.Event, label: str = "GLM training", poll_s: float = 2.0
) -> None:
    """A progress bar of the optimizer steps that rank 0 reports in ``run_dir/progress.json``."""
    from hoprag.logs import progress

    bar = None
    while True:
        stopped = stop.wait(poll_s)
        state = read_progress(run_dir)
        if state is not None:
            if bar is None:
                bar = progress(state["total_steps"], label, unit="step")
            if state["step"] > bar.n:
                bar.update(state["step"] - bar.n)
        if stopped:
            break
    if bar is not None:
        bar.close()
