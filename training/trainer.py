"""``hoprag train``: a Ray Train ``TorchTrainer`` around :func:`training.loop.train_loop_per_worker`.

Fault tolerance: ``FailureConfig(max_failures)`` restarts the worker group from the latest
checkpoint after a worker or node dies; re-running the same command (same ``--out``) resumes the
same run from its latest checkpoint, because the run name and storage path are derived from it.

Several indexes: ``data.indexes`` (or the ``index_dir`` argument, which replaces that list). With
``data.streaming`` the training subgraphs are encoded by a Ray Data stage (:mod:`training.data`)
and handed to the workers as the ``"train"`` dataset, split equally among them.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hoprag.config import dump_config
from hoprag.ray_runtime import RayConfig, init_ray
from training.config import RunSettings, TrainConfig, TrainData
from training.data import EpochGeometry, build_train_dataset
from training.families import family_of
from training.loop import (
    PROGRESS_FILE,
    STATE_FILE,
    VALIDATION_FILE,
    read_progress,
    total_steps,
    train_loop_per_worker,
    worker_env,
)
from training.question_vectors import encode_run_questions
from training.trainset import TrainDataError, inspect_sources
from training.warm_start import InitError, remember_init, resolve_init

IndexArg = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None


def with_indexes(config: TrainConfig, index_dir: IndexArg) -> TrainConfig:
    """``config`` with ``data.indexes`` replaced by ``index_dir`` (a path or a list of paths), if given."""
    if index_dir is None:
        return config
    from pydantic import ValidationError

    paths = [index_dir] if isinstance(index_dir, str | os.PathLike) else list(index_dir)
    try:
        data = TrainData.model_validate(
            {**config.data.model_dump(), "indexes": [{"path": Path(p)} for p in paths]}
        )
    except ValidationError as exc:
        raise TrainDataError(f"--index: {exc.errors()[0]['msg']}") from exc
    return config.model_copy(update={"data": data})


def run_training(
    index_dir: IndexArg, out: Path, config: TrainConfig, ray_config: RayConfig | None = None
) -> dict[str, Any]:
    """Train on ``index_dir`` (a path or several; None: ``config.data.indexes``), checkpoint and
    export ``out/retriever``; returns the final metrics. With ``config.init`` the model starts from
    that exported retriever (:mod:`training.warm_start`).

    Raises :class:`training.data.TrainDataError` (naming the index) for an index that cannot be
    trained on, and :class:`~training.warm_start.InitError` for an unusable init, before Ray starts.
    """
    import ray
    from ray.train.torch import TorchTrainer

    config = with_indexes(config, index_dir)
    out = Path(out).resolve()
    init = None
    if config.init is not None:
        if config.retriever != "glm":
            raise InitError(
                f"--init / init: warm start is implemented for GLM retrievers, not {config.retriever}"
            )
        config, init = resolve_init(config, out)
    sources = inspect_sources(config)
    geometry = EpochGeometry.of(
        sum(s.n_train for s in sources), config.run.num_workers, config.deepspeed.micro_batch_size
    )
    remember_init(out, init)
    out.mkdir(parents=True, exist_ok=True)
    (out / "train_config.yaml").write_text(dump_config(config))
    question_vectors = encode_run_questions(sources, config)
    init_ray(ray_config)
    family = family_of(config)
    # Ray Train's run directory is RUN_DIR/ray/<family name> ("glm" for GLM runs, as before).
    options = trainer_options(config.run, family.name, out)
    params: dict[str, Any] = {
        "config": config.model_dump(mode="json"),
        "sources": [s.to_dict() for s in sources],
        "out": str(out),
        "first_epoch": 0,
        "init": init,
        # One copy in the object store for every worker and encoder actor (read-only, zero-copy).
        "question_vectors": ray.put(question_vectors),
    }
    datasets = None
    if config.data.streaming:
        # The stream starts at the epoch of the checkpoint this run resumes from (if any), and
        # holds the epochs up to the step budget.
        state = latest_state(f"{options['run_config'].storage_path.rstrip('/')}/{family.name}")
        first = int(state["epoch"]) if state else 0
        last = min(
            config.epochs,
            math.ceil(total_steps(config, geometry.batches_per_epoch) / geometry.batches_per_epoch),
        )
        params["first_epoch"] = first
        env = {k: v for k, v in worker_env(False).items() if k != "DS_ACCELERATOR"}
        datasets = {
            "train": build_train_dataset(
                sources, config, range(first, max(first, last)), geometry, env, params["question_vectors"]
            )
        }
    trainer = TorchTrainer(train_loop_per_worker, train_loop_config=params, datasets=datasets, **options)
    result = fit_with_progress(trainer, out, f"{family.label} training")
    metrics = dict(result.metrics or {})
    if init is not None:
        metrics["init"] = init
    metrics.update(ranker_summary(out))
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, default=str))
    return metrics


def ranker_summary(out: Path) -> dict[str, Any]:
    """The exported document ranker (``exported_ranker``) and every ranker's last validation
    recall (``val_recall@K/ranker=NAME``, the mean over the run's indexes), for metrics.json."""
    from hoprag.glm.artifact import read_retriever_meta
    from training.rankers import last_validation, ranker_metric, recall_by_ranker

    _, meta = read_retriever_meta(out / "retriever", kind=None)
    summary: dict[str, Any] = {"exported_ranker": meta["settings"]["doc_ranker"]}
    for ranker, by_k in recall_by_ranker(last_validation(out / VALIDATION_FILE)).items():
        summary.update({ranker_metric(k, ranker): v for k, v in by_k.items()})
    return summary


def latest_state(run_storage: str) -> dict[str, Any] | None:
    """The trainer state of the newest checkpoint under a local ``storage_path/RUN_NAME`` (None
    for none, or for remote storage: the stream then starts at epoch 0 and resuming workers drop
    the earlier epochs' batches)."""
    if "://" in run_storage or not Path(run_storage).is_dir():
        return None
    states = []
    for path in Path(run_storage).glob(f"checkpoint_*/{STATE_FILE}"):
        try:
            states.append(json.loads(path.read_text()))
        except (OSError, json.JSONDecodeError):
            continue
    return max(states, key=lambda s: int(s["step"]), default=None)


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
