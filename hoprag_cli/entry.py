"""The ``hoprag`` console script: the parser built from every command module, and dispatch.

Heavy imports (torch, ray, transformers) happen inside the handler that needs them, so
``hoprag --help`` is instant.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from hoprag import __version__
from hoprag.logs import configure_logging, is_quiet, log_file, log_tail
from hoprag_cli import (
    ask,
    bench,
    cluster,
    demo,
    distill,
    evaluate,
    export,
    generate,
    index,
    serve,
    submit,
    train,
)
from hoprag_cli.common import UserError

# Each module registers its subcommand(s) with a ``handler``; this order is the order of --help.
COMMAND_MODULES = (
    index,
    export,
    generate,
    demo,
    train,
    distill,
    evaluate,
    serve,
    ask,
    bench,
    submit,
    cluster,
)


def build_parser() -> argparse.ArgumentParser:
    """The whole ``hoprag`` parser (``hoprag submit`` checks the command it submits with it)."""
    parser = argparse.ArgumentParser(
        prog="hoprag",
        description="Multi-hop QA over knowledge graphs on Ray: indexing, training, serving, evaluation.",
    )
    parser.add_argument("--version", action="version", version=f"hoprag {__version__}")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="debug logging, and Ray / Ray Data / Serve / httpx logs on the terminal too "
        "(default: in a log file under the run directory, its last lines shown on failure)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMAND_MODULES:
        module.register(sub)
    # A command that runs another hoprag command (submit) checks it with this same parser, handed
    # over here rather than imported (the command modules sit below this one).
    parser.set_defaults(check_command=lambda argv: parser.parse_args(rewrite_argv(argv)))
    return parser


def rewrite_argv(argv: Sequence[str]) -> list[str]:
    """Spellings the parser does not know directly: ``hoprag index stats DIR`` → ``index-stats DIR``."""
    argv = list(argv)
    if len(argv) >= 2 and argv[0] == "index" and argv[1] == "stats":
        return ["index-stats", *argv[2:]]
    return argv


def parse_command(argv: Sequence[str]) -> argparse.Namespace:
    """Parse hoprag command-line arguments (without the program name); exits on a bad command."""
    return build_parser().parse_args(rewrite_argv(argv))


def log_path(args: argparse.Namespace) -> Path:
    """Where this command's framework logs go: ``RUN_DIR/logs/`` for commands with a run directory
    (``run_dir_arg`` names its argument), else ``$HOPRAG_CACHE_DIR/logs/``."""
    from hoprag.paths import cache_dir

    words = [args.command, getattr(args, "eval", None), getattr(args, "bench", None)]
    name = "-".join(w for w in words if w) + time.strftime("-%Y%m%d-%H%M%S") + f"-{os.getpid()}.log"
    run_dir = getattr(args, getattr(args, "run_dir_arg", "") or "-", None)
    return (Path(run_dir) if run_dir else cache_dir()) / "logs" / name


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hoprag`` console script."""
    args = parse_command(sys.argv[1:] if argv is None else argv)
    from hoprag.threads import wait_passively

    wait_passively()  # before torch or llama.cpp loads; a local Ray cluster's workers inherit it
    configure_logging(args.verbose, log_path(args))
    from hoprag.config import ConfigError

    try:
        return args.handler(args)
    except ConfigError as exc:
        print(f"hoprag: config error: {exc}", file=sys.stderr)
        return 2
    except UserError as exc:
        print(f"hoprag: {exc}", file=sys.stderr)
        return 2
    except BaseException as exc:
        if is_quiet() and not isinstance(exc, KeyboardInterrupt | SystemExit) and log_tail():
            print(f"hoprag: {args.command} failed; the last lines of {log_file()}:", file=sys.stderr)
            print(log_tail(), file=sys.stderr, end="")
        raise
