"""``hoprag train``: the GLM retriever with Ray Train + DeepSpeed; exports RUN_DIR/retriever.

With no recipe given it fine-tunes the GLM shipped with hoprag (:mod:`training.recipes`), exports
the document ranker that validated best and, on the run's validation questions, compares the result
with dense retrieval and the shipped GLM as it is (:mod:`training.baselines`), naming the better
choice when the run does not beat them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hoprag_cli.common import UserError, add_config_args

if TYPE_CHECKING:
    from training.config import TrainConfig


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
        "RUN_DIR/retriever; fresh optimizer, step 0); overrides the recipe's init (default: "
        "packaged-glm, the GLM shipped with hoprag)",
    )
    start = t.add_mutually_exclusive_group()
    start.add_argument(
        "--from-scratch",
        action="store_true",
        help="train a GLM from its pretrained backbone (the config defaults: a 4-layer T5) instead of "
        "fine-tuning the shipped GLM (the default recipe, training/recipes.py)",
    )
    start.add_argument(
        "--backbone",
        default=None,
        metavar="MODEL",
        help="train from scratch on this backbone (embedded-t5, minilm, t5-large, a path or hub id; "
        "implies --from-scratch)",
    )
    t.add_argument(
        "--no-baselines",
        action="store_true",
        help="skip the closing comparison with dense and the shipped GLM on the validation questions",
    )
    t.add_argument("--ray-address", default=None, help="existing Ray cluster (default: start a local one)")
    add_config_args(t)
    t.set_defaults(handler=run_train, run_dir_arg="out")


def train_config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The run's config: the default recipe unless ``--config`` (a recipe file) or ``--from-scratch``
    / ``--backbone`` (the config defaults) choose another, then ``--set`` and the flags."""
    from hoprag.config import load_config
    from training.config import TrainConfig
    from training.recipes import default_recipe

    if args.config is not None and (args.from_scratch or args.backbone):
        raise UserError(
            "train: --from-scratch / --backbone choose a recipe; with --config the file is the recipe"
        )
    overrides = list(args.overrides)
    if args.max_steps is not None:
        overrides.append(f"max_steps={args.max_steps}")
    if args.workers is not None:
        overrides.append(f"run.num_workers={args.workers}")
    base: dict[str, Any] | None = None
    if args.backbone:
        base = {"backbone": {"model": args.backbone}}
    elif (
        args.config is None
        and not args.from_scratch
        # the default recipe fine-tunes a GLM; `--set retriever=gnn` trains the GNN baseline instead
        and load_config(TrainConfig, None, overrides).retriever == "glm"
    ):
        base = default_recipe()
    config = load_config(TrainConfig, args.config, overrides, base=base)
    if args.init is not None:
        config = config.model_copy(update={"init": str(args.init)})
    return config


def run_train(args: argparse.Namespace) -> int:
    from hoprag.ray_runtime import RayConfig
    from training.baselines import compare_with_baselines
    from training.trainer import run_training
    from training.trainset import TrainDataError
    from training.warm_start import InitError

    config = train_config_from_args(args)
    start = (
        f"fine-tuning {config.init}" if config.init else f"training a {config.retriever.upper()} from scratch"
    )
    print(f"[train] {start} → {args.out}", flush=True)
    try:
        metrics = run_training(args.index, args.out, config, RayConfig(address=args.ray_address))
    except TrainDataError as exc:
        raise UserError(str(exc)) from exc
    except InitError as exc:
        default = not (args.from_scratch or args.backbone or args.config or args.init)
        raise UserError(f"{exc}{' (--from-scratch trains without it)' if default else ''}") from exc
    print(json.dumps({k: v for k, v in metrics.items() if isinstance(v, int | float | str)}))
    print(
        f"retriever exported to {args.out / 'retriever'} (document ranker {metrics.get('exported_ranker')})"
    )
    if not args.no_baselines:
        report = compare_with_baselines(args.index, args.out, config)
        print(report.render())
    return 0
