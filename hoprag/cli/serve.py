"""``hoprag serve``: the QA app on Ray Serve, in the foreground (Ctrl-C stops it)."""

from __future__ import annotations

import argparse

from hoprag.cli.common import add_config_args


def register(sub: argparse._SubParsersAction) -> None:
    sv = sub.add_parser("serve", help="serve the QA app (Ray Serve) locally in the foreground")
    sv.add_argument("--index", required=True, help="index directory")
    sv.add_argument("--retriever", default="dense", help="GLM retriever / training run directory, or 'dense'")
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=int, default=8000)
    add_config_args(sv)
    sv.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    from hoprag.config import load_config
    from serving.run import serve_foreground
    from serving.settings import QAAppSettings

    overrides = [*args.overrides, f"index={args.index}", f"retriever={args.retriever}"]
    settings = load_config(QAAppSettings, args.config, overrides)
    return serve_foreground(settings, args.host, args.port)
