"""``hoprag train``: the GLM retriever with Ray Train + DeepSpeed; exports RUN_DIR/retriever."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hoprag_cli.common import UserError, add_config_args


def register(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser(
        "train", help="train the GLM retriever with Ray Train + DeepSpeed; exports RUN_DIR/retriever"
    )
    t.add_argument(
        "--index",
        type=Path,
        action="append",
        default=None,
        help="index directory with processed questions; repeat to train on several (replaces the "
        "config's data.indexes; set names and weights there)",
    )
    t.add_argument(
        "--out", type=Path, required=True, help="run directory (re-running the same command resumes)"
    )
    t.add_argument("--max-steps", type=int, default=None, help="stop after N optimizer steps (quick runs)")
    t.add_argument("--workers", type=int, default=None, help="Ray Train workers (overrides run.num_workers)")
    t.add_argument(
        "--init",
        type=Path,
        default=None,
        metavar="RUN_DIR",
        help="warm start: begin from this exported retriever's weights and architecture (RUN_DIR or "
        "RUN_DIR/retriever; fresh optimizer, step 0); overrides the config's init",
    )
    t.add_argument("--ray-address", default=None, help="existing Ray cluster (default: start a local one)")
    add_config_args(t)
    t.set_defaults(handler=run_train, run_dir_arg="out")


def run_train(args: argparse.Namespace) -> int:
    from hoprag.config import load_config
    from hoprag.ray_runtime import RayConfig
    from training.config import TrainConfig
    from training.trainer import run_training
    from training.trainset import TrainDataError
    from training.warm_start import InitError

    overrides = list(args.overrides)
    if args.max_steps is not None:
        overrides.append(f"max_steps={args.max_steps}")
    if args.workers is not None:
        overrides.append(f"run.num_workers={args.workers}")
    config = load_config(TrainConfig, args.config, overrides)
    if args.init is not None:
        config = config.model_copy(update={"init": str(args.init)})
    try:
        metrics = run_training(args.index, args.out, config, RayConfig(address=args.ray_address))
    except (TrainDataError, InitError) as exc:
        raise UserError(str(exc)) from exc
    print(json.dumps({k: v for k, v in metrics.items() if isinstance(v, int | float | str)}))
    print(f"retriever exported to {args.out / 'retriever'}")
    return 0
