"""The ``hoprag`` console script: the parser built from every command module, and dispatch.

Heavy imports (torch, ray, transformers) happen inside the handler that needs them, so
``hoprag --help`` is instant.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from hoprag import __version__
from hoprag.cli import ask, bench, cluster, demo, evaluate, generate, index, serve, submit, train
from hoprag.cli.common import UserError

# Each module registers its subcommand(s) with a ``handler``; this order is the order of --help.
COMMAND_MODULES = (index, generate, demo, train, evaluate, serve, ask, bench, submit, cluster)


def build_parser() -> argparse.ArgumentParser:
    """The whole ``hoprag`` parser (``cluster.submit`` checks submitted commands with it)."""
    parser = argparse.ArgumentParser(
        prog="hoprag",
        description="Multi-hop QA over knowledge graphs on Ray: indexing, training, serving, evaluation.",
    )
    parser.add_argument("--version", action="version", version=f"hoprag {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMAND_MODULES:
        module.register(sub)
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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hoprag`` console script."""
    args = parse_command(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from hoprag.config import ConfigError

    try:
        return args.handler(args)
    except ConfigError as exc:
        print(f"hoprag: config error: {exc}", file=sys.stderr)
        return 2
    except UserError as exc:
        print(f"hoprag: {exc}", file=sys.stderr)
        return 2
