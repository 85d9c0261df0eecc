"""``hoprag distill``: teacher LLM → LoRA student of the embedded model; exports RUN_DIR/adapter."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hoprag_cli.common import UserError, add_config_args


def register(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser(
        "distill",
        help="distil the pipeline's LLM tasks from a teacher into a LoRA student (Ray Data + Ray Train); "
        "exports RUN_DIR/adapter (use it with --set llm.embedded.adapter=RUN_DIR/adapter)",
    )
    d.add_argument(
        "--corpus",
        type=Path,
        required=True,
        help="corpus (a sample of yours, a generated one, or a published benchmark file as hoprag index reads it)",
    )
    d.add_argument(
        "--out", type=Path, required=True, help="run directory (re-running the same command resumes)"
    )
    d.add_argument("--max-steps", type=int, default=None, help="stop after N optimizer steps")
    d.add_argument(
        "--teacher-only",
        action="store_true",
        help="stop after the teacher stage: its answers cached in RUN_DIR/teacher and merged into "
        "teacher_set when the config sets one (labelling in pieces, session by session)",
    )
    add_config_args(d)
    d.set_defaults(handler=run_distill, run_dir_arg="out")


def run_distill(args: argparse.Namespace) -> int:
    from distillation.config import DistillConfig
    from distillation.job import run_distillation
    from hoprag.config import load_config
    from indexing.corpus import CorpusError

    overrides = list(args.overrides)
    if args.max_steps is not None:
        overrides.append(f"optim.max_steps={args.max_steps}")
    config = load_config(DistillConfig, args.config, overrides)
    try:
        summary = run_distillation(args.corpus, args.out, config, teacher_only=args.teacher_only)
    except (CorpusError, ValueError) as exc:
        raise UserError(str(exc)) from exc
    print(json.dumps(summary["teacher"]))
    if args.teacher_only:
        print(json.dumps(summary["gold"]))
        print(f"teacher stage done (--teacher-only); teacher set: {summary['teacher_set']}")
        return 0
    print(json.dumps(summary["student"]["metrics"]))
    print(
        f"adapter exported to {summary['adapter']}; use it with --set llm.embedded.adapter={summary['adapter']}"
    )
    return 0
