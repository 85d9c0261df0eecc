"""``hoprag submit``: run a hoprag command as a Ray job on a cluster (like ``ray job submit``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hoprag_cli.common import UserError, key_values


def register(sub: argparse._SubParsersAction) -> None:
    su = sub.add_parser(
        "submit",
        help="run a hoprag command as a Ray job on a cluster (like `ray job submit`)",
        description="hoprag submit --address http://HEAD:8265 [--wait] [--follow] [options] -- "
        "index --corpus ... --out ...   The command after '--' is checked locally, then runs on the "
        "cluster as `python -m hoprag_cli ...` with the repository as working directory.",
    )
    su.add_argument(
        "--address",
        default=None,
        help="Ray job server, e.g. http://HEAD:8265 (default: $RAY_API_SERVER_ADDRESS, then $RAY_ADDRESS)",
    )
    su.add_argument("--wait", action="store_true", help="block until the job ends; exit 1 if it failed")
    su.add_argument("--follow", action="store_true", help="stream the job's logs until it ends")
    su.add_argument("--submission-id", default=None, help="job id (default: hoprag-<stage>-<time>-<rand>)")
    su.add_argument(
        "--working-dir",
        type=Path,
        default=None,
        help="uploaded as the job's working directory (default: this hoprag checkout)",
    )
    su.add_argument(
        "--no-working-dir", action="store_true", help="upload nothing (the image already holds hoprag)"
    )
    su.add_argument("--pip", action="append", default=[], metavar="REQ", help="pip requirement (repeatable)")
    su.add_argument("--image-uri", default=None, help="container image for the job (runtime_env image_uri)")
    su.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="job environment variable (repeatable)",
    )
    su.add_argument("--runtime-env", type=Path, default=None, help="YAML runtime_env to start from")
    su.add_argument("--entrypoint-num-cpus", type=float, default=None)
    su.add_argument("--entrypoint-num-gpus", type=float, default=None)
    su.add_argument("--entrypoint-memory", type=int, default=None, help="bytes")
    su.add_argument(
        "--entrypoint-resources", default=None, metavar="JSON", help="custom resources, e.g. '{\"head\": 1}'"
    )
    su.add_argument(
        "--metadata", action="append", default=[], metavar="KEY=VALUE", help="job metadata (repeatable)"
    )
    su.add_argument("--python", default="python", help="Python executable on the cluster (default: python)")
    su.add_argument(
        "hoprag_command", nargs=argparse.REMAINDER, help="-- then the hoprag command and its args"
    )
    su.set_defaults(handler=run_submit_command)


def run_submit_command(args: argparse.Namespace) -> int:
    import os

    from pydantic import ValidationError

    from cluster.submit import SubmitError, SubmitOptions, load_runtime_env_file, project_root, run_submit

    command = list(args.hoprag_command)
    if command and command[0] == "--":
        command = command[1:]
    address = args.address or os.environ.get("RAY_API_SERVER_ADDRESS") or os.environ.get("RAY_ADDRESS")
    if not address:
        raise UserError("submit: give --address http://HEAD:8265 (or set RAY_API_SERVER_ADDRESS)")
    try:
        resources = json.loads(args.entrypoint_resources) if args.entrypoint_resources else {}
    except json.JSONDecodeError as exc:
        raise UserError(f"submit: --entrypoint-resources is not JSON: {exc}") from exc
    try:
        options = SubmitOptions(
            address=address,
            submission_id=args.submission_id,
            working_dir=None if args.no_working_dir else (args.working_dir or project_root()),
            pip=args.pip,
            image_uri=args.image_uri,
            env_vars=key_values(args.env, "--env"),
            runtime_env=load_runtime_env_file(args.runtime_env) if args.runtime_env else {},
            entrypoint_num_cpus=args.entrypoint_num_cpus,
            entrypoint_num_gpus=args.entrypoint_num_gpus,
            entrypoint_memory=args.entrypoint_memory,
            entrypoint_resources=resources,
            metadata=key_values(args.metadata, "--metadata"),
            python=args.python,
        )
        return run_submit(options, command, wait=args.wait, follow=args.follow, check=args.check_command)
    except ValidationError as exc:
        raise UserError(f"submit: {exc}") from exc
    except SubmitError as exc:
        raise UserError(str(exc)) from exc
