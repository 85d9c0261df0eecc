"""``hoprag serve``: the QA app on Ray Serve, in the foreground (Ctrl-C stops it)."""

from __future__ import annotations

import argparse
from typing import Any

from hoprag.retrieval.base import DEFAULT_RETRIEVER
from hoprag_cli.common import UserError, add_config_args


def register(sub: argparse._SubParsersAction) -> None:
    sv = sub.add_parser(
        "serve",
        help="serve the QA app (Ray Serve) locally in the foreground",
        description="Serve one index (--index DIR [--retriever SPEC]) or several by name "
        "(--index films=DIR --index music=DIR2 --retriever films=RUN_DIR; the first is the default), "
        "or the indexes a --config file lists.",
    )
    sv.add_argument(
        "--index",
        action="append",
        default=[],
        metavar="[NAME=]DIR",
        help="index directory; NAME=DIR (repeatable) serves several indexes by name",
    )
    sv.add_argument(
        "--retriever",
        action="append",
        default=[],
        metavar="[NAME=]SPEC",
        help="GLM/GNN retriever or training run directory, 'dense', or several joined by '+' (default: "
        "routed, dense fused with the shipped GLM and PPR where those agree; docs/ppr.md); NAME=SPEC per named index",
    )
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=int, default=8000)
    add_config_args(sv)
    sv.set_defaults(handler=run_serve)


def served_indexes_from_args(indexes: list[str], retrievers: list[str]) -> dict[str, Any]:
    """The settings ``--index`` / ``--retriever`` give: ``{"index", "retriever"}`` for one unnamed
    index, ``{"indexes": [...]}`` for named ones, ``{}`` for none (a --config must list them)."""
    named = [value.partition("=") for value in indexes]
    if not indexes:
        if retrievers:
            raise UserError("serve: --retriever needs --index")
        return {}
    if len(indexes) == 1 and not named[0][1]:
        if len(retrievers) > 1 or any("=" in r for r in retrievers):
            raise UserError("serve: with one unnamed --index, give at most one --retriever SPEC")
        return {"index": indexes[0], "retriever": retrievers[0] if retrievers else DEFAULT_RETRIEVER}
    if any(not sep or not name for name, sep, _ in named):
        raise UserError("serve: several indexes are named: --index NAME=DIR for each")
    by_name: dict[str, str] = {}
    for value in retrievers:
        name, sep, spec = value.partition("=")
        if not sep or name not in {n for n, _, _ in named}:
            raise UserError(f"serve: --retriever {value!r}: use NAME=SPEC with the NAME of an --index")
        by_name[name] = spec
    return {
        "indexes": [
            {"name": name, "index": path, "retriever": by_name.get(name, DEFAULT_RETRIEVER)}
            for name, _, path in named
        ]
    }


def run_serve(args: argparse.Namespace) -> int:
    from hoprag.config import ConfigError, load_config, read_yaml_mapping
    from serving.run import serve_foreground
    from serving.settings import QAAppSettings

    from_args = served_indexes_from_args(args.index, args.retriever)
    if not from_args and args.config is None:
        raise UserError("serve: give --index DIR (or NAME=DIR, repeatable) or a --config that lists indexes")
    try:
        base = read_yaml_mapping(args.config, "config file") if args.config is not None else {}
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    if from_args:  # the command line's indexes replace the config file's
        base = {k: v for k, v in base.items() if k not in ("index", "indexes", "retriever")} | from_args
    settings = load_config(QAAppSettings, None, args.overrides, base=base)
    for served in settings.served_indexes:
        print(f"[serve] index {served.name}: {served.index}, retriever {served.retriever}", flush=True)
    return serve_foreground(settings, args.host, args.port)
