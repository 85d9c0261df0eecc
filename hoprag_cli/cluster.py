"""``hoprag cluster render``: the KubeRay manifests and the launcher YAML from a parameter file.

:func:`run_cluster_command` raises ``ValueError`` with a one-line message on bad parameters; the
registered handler turns it into the CLI's one-line error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cluster import DEFAULT_OUT, DEFAULT_PARAMS
from hoprag_cli.common import UserError


def register(sub: argparse._SubParsersAction) -> None:
    add_cluster_parser(sub).set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        return run_cluster_command(args)
    except ValueError as exc:
        raise UserError(str(exc)) from exc


def add_cluster_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``cluster`` (with subcommand ``render``) to ``subparsers`` (from ``add_subparsers``)."""
    c = subparsers.add_parser(
        "cluster",
        help="render KubeRay manifests and the Ray cluster-launcher YAML from one parameter file",
        description="Cluster deployment: KubeRay RayCluster, RayJobs (index, train, eval), RayService "
        "(QA app) and an AWS cluster-launcher YAML, all rendered from cluster/params/*.yaml.",
    )
    csub = c.add_subparsers(dest="cluster_command", required=True)
    r = csub.add_parser(
        "render",
        help="write OUT/manifests/*.yaml and OUT/launcher/aws-gpu.yaml (--check: only compare)",
        description="Render every manifest from the parameter file. The RayService embeds the Serve "
        "config file it names, so re-render after changing serving/config.",
    )
    r.add_argument(
        "--params", type=Path, default=Path(DEFAULT_PARAMS), help=f"parameter file (default {DEFAULT_PARAMS})"
    )
    r.add_argument(
        "--out", type=Path, default=Path(DEFAULT_OUT), help=f"output directory (default {DEFAULT_OUT})"
    )
    r.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 listing the files that differ from a fresh render",
    )
    return c


def run_cluster_command(args: argparse.Namespace) -> int:
    """Run ``hoprag cluster SUBCOMMAND``; returns the exit code (``ValueError`` for bad params)."""
    from cluster.params import load_params
    from cluster.render import check_rendered, render_all, write_rendered

    if args.cluster_command != "render":
        raise ValueError(f"cluster: unknown subcommand {args.cluster_command!r}")
    params = load_params(args.params)
    files = render_all(params, params_path=args.params.as_posix(), out=args.out.as_posix())
    if args.check:
        drifted = check_rendered(files, args.out)
        if drifted:
            print(
                f"hoprag cluster render --check: {len(drifted)} file(s) under {args.out} differ from "
                f"{args.params}: {', '.join(drifted)}; re-render with: hoprag cluster render "
                f"--params {args.params} --out {args.out}",
                file=sys.stderr,
            )
            return 1
        print(f"{len(files)} rendered files under {args.out} are up to date with {args.params}")
        return 0
    for path in write_rendered(files, args.out):
        print(f"wrote {path}")
    return 0
