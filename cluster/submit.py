"""``hoprag submit``: run a hoprag CLI command as a Ray job on a cluster (like ``ray job submit``).

The job's entrypoint is the same command a user runs locally (``python -m hoprag_cli index ...``),
so a stage behaves the same on a laptop and on a cluster: inside a job, ``RAY_ADDRESS`` is set and
:func:`hoprag.ray_runtime.init_ray` joins the job's cluster instead of starting one. The caller
(the ``hoprag submit`` command) passes its own parser as ``check``, so a typo fails in a second
rather than on the cluster; this module never imports the command layer.

Authentication: Ray 2.60 clusters use token auth by default; ``hoprag submit`` sends the token from
``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token`` (see :func:`ray_auth_token`).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import shlex
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from pydantic import Field

from hoprag.config import StrictModel

# The module a job runs (``python -m ENTRYPOINT_MODULE <command>``): the ``hoprag`` console script.
ENTRYPOINT_MODULE = "hoprag_cli"
# Checks a hoprag command line (without the program name) before it is submitted; raises
# SystemExit (as argparse does, having printed why) or ValueError when it is not a valid command.
CommandCheck = Callable[[Sequence[str]], object]

TERMINAL = {"SUCCEEDED", "FAILED", "STOPPED"}
FAILED_LOG_LINES = 40
# Never uploaded with the working directory (Ray also honours .gitignore): builds, caches, runs.
WORKING_DIR_EXCLUDES = [
    ".git",
    ".venv",
    "runs",
    "**/__pycache__",
    "*.egg-info",
    ".pytest_cache",
    ".ruff_cache",
]


class SubmitError(RuntimeError):
    """A submission that could not be made (bad command, unreachable cluster, bad options)."""


class SubmitOptions(StrictModel):
    """What ``hoprag submit`` sends besides the command: where, with which environment and resources."""

    address: str = Field(description="Ray dashboard / job server address, e.g. http://HEAD:8265.")
    submission_id: str | None = Field(
        default=None, description="Job id (default: hoprag-<stage>-<time>-<rand>)."
    )
    working_dir: Path | None = Field(
        default=None, description="Directory uploaded as the job's working directory (the repository)."
    )
    pip: list[str] = Field(default_factory=list, description="pip requirements installed for the job.")
    image_uri: str | None = Field(default=None, description="Container image the job runs in.")
    env_vars: dict[str, str] = Field(default_factory=dict, description="Environment variables of the job.")
    runtime_env: dict[str, Any] = Field(
        default_factory=dict, description="A base runtime_env (from --runtime-env FILE); options above win."
    )
    entrypoint_num_cpus: float | None = Field(default=None, ge=0)
    entrypoint_num_gpus: float | None = Field(default=None, ge=0)
    entrypoint_memory: int | None = Field(default=None, ge=0, description="Bytes.")
    entrypoint_resources: dict[str, float] = Field(default_factory=dict)
    metadata: dict[str, str] = Field(default_factory=dict)
    python: str = Field(default="python", description="Python executable on the cluster.")


def project_root(start: Path | None = None) -> Path | None:
    """The hoprag checkout containing ``start`` (default: this package's), if running from one."""
    here = (start or Path(__file__)).resolve()
    for folder in [here, *here.parents]:
        if (folder / "pyproject.toml").is_file() and (folder / ENTRYPOINT_MODULE / "__init__.py").is_file():
            return folder
    return None


def build_entrypoint(
    command: Sequence[str], python: str = "python", check: CommandCheck | None = None
) -> str:
    """The job's shell entrypoint for a hoprag command, after ``check`` (the CLI's parser) accepts it."""
    args = list(command)
    if not args:
        raise SubmitError(
            "submit: give the hoprag command to run after '--', e.g. -- index --corpus ... --out ..."
        )
    if args[0] == "hoprag":
        args = args[1:]
    if args and args[0] == "submit":
        raise SubmitError("submit: the submitted command cannot itself be 'submit'")
    if check is not None:
        try:
            check(args)
        except (SystemExit, ValueError) as exc:  # argparse already printed what is wrong
            raise SubmitError(f"submit: not a valid hoprag command: {shlex.join(args)}") from exc
    return shlex.join([python, "-m", ENTRYPOINT_MODULE, *args])


def build_runtime_env(options: SubmitOptions) -> dict[str, Any]:
    """The job's runtime_env: the base file, then working_dir, pip, image and environment variables."""
    env = dict(options.runtime_env)
    if options.working_dir is not None:
        if not options.working_dir.is_dir():
            raise SubmitError(f"submit: working directory {options.working_dir} does not exist")
        env["working_dir"] = str(options.working_dir)
        env["excludes"] = sorted({*env.get("excludes", []), *WORKING_DIR_EXCLUDES})
    if options.pip:
        env["pip"] = list(options.pip)
    if options.image_uri:
        env["image_uri"] = options.image_uri
    if options.env_vars:
        env["env_vars"] = {**env.get("env_vars", {}), **options.env_vars}
    return env


def default_submission_id(command: Sequence[str]) -> str:
    stage = next((a for a in command if a != "hoprag" and not a.startswith("-")), "job")
    return f"hoprag-{stage}-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"


def load_runtime_env_file(path: Path) -> dict[str, Any]:
    """A Ray runtime_env from a YAML file (``--runtime-env``)."""
    from hoprag.config import read_yaml_mapping

    try:
        return read_yaml_mapping(path, "submit: runtime env file")
    except ValueError as exc:
        raise SubmitError(str(exc)) from exc


def ray_auth_token() -> str | None:
    """The Ray cluster token this machine holds, looked up as Ray does (``RAY_AUTH_MODE=disabled``
    opts out): ``RAY_AUTH_TOKEN``, then the file at ``RAY_AUTH_TOKEN_PATH``, then ``~/.ray/auth_token``.

    Ray's job client sends a token only when ``RAY_AUTH_MODE=token`` is set in the client's shell;
    a head started with ``ray start`` enables token auth by default, so hoprag sends the token it
    finds without asking for that extra step.
    """
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "disabled":
        return None
    if os.environ.get("RAY_AUTH_TOKEN"):
        return os.environ["RAY_AUTH_TOKEN"].strip()
    path = Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token")
    return path.read_text().strip() or None if path.is_file() else None


def connect(address: str) -> Any:
    """A :class:`ray.job_submission.JobSubmissionClient`, with a clear error when unreachable."""
    from ray.job_submission import JobSubmissionClient

    # Packaging the working directory logs every ignored file and warns that .git/.venv are skipped
    # (hoprag skips them anyway); real problems are errors.
    for name in (
        "ray._private.runtime_env.packaging",
        "ray._private.runtime_env.working_dir",
        "ray.dashboard.modules.dashboard_sdk",
    ):
        logging.getLogger(name).setLevel(logging.ERROR)
    token = ray_auth_token()
    headers = {"Authorization": f"Bearer {token}"} if token else None
    try:
        return JobSubmissionClient(address, headers=headers)
    except Exception as exc:  # ConnectionError, auth errors, bad URLs: all mean "cannot submit"
        raise SubmitError(f"submit: cannot reach the Ray job server at {address}: {exc}") from exc


def job_request(
    options: SubmitOptions, command: Sequence[str], check: CommandCheck | None = None
) -> dict[str, Any]:
    """The ``submit_job`` arguments for ``command`` (hoprag CLI arguments); checks the command (with
    ``check``) and the runtime_env without any network call."""
    request: dict[str, Any] = {
        "entrypoint": build_entrypoint(command, options.python, check),
        "submission_id": options.submission_id or default_submission_id(command),
        "runtime_env": build_runtime_env(options) or None,
        "metadata": {"hoprag_command": shlex.join(command), **options.metadata},
    }
    for name in ("entrypoint_num_cpus", "entrypoint_num_gpus", "entrypoint_memory"):
        value = getattr(options, name)
        if value is not None:
            request[name] = value
    if options.entrypoint_resources:
        request["entrypoint_resources"] = options.entrypoint_resources
    return request


# A head's job server answers this (HTTP 500) until its dashboard agent has registered, and for good
# when the agent could not start its HTTP server (e.g. its port, 52365 by default, was taken).
NO_AGENT = "No available agent to submit job"
# Waits between tries while the head has no agent: about a minute in all, then a clear error.
NO_AGENT_BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 15.0, 15.0, 15.0)


def submit(
    client: Any,
    request: dict[str, Any],
    backoff_s: Sequence[float] = NO_AGENT_BACKOFF_S,
    sleep: Callable[[float], None] = time.sleep,
    out: TextIO | None = None,
) -> str:
    """Submit a :func:`job_request` as a Ray job; returns its submission id.

    A head without a ready dashboard agent refuses with "No available agent to submit job"; that is
    retried after each wait in ``backoff_s`` (a head that has just started answers the same way).
    Any other refusal, or one that persists, is a :class:`SubmitError`.
    """
    waits = iter(backoff_s)
    while True:
        try:
            return client.submit_job(**request)
        except Exception as exc:
            if NO_AGENT not in str(exc):
                raise SubmitError(f"submit: the job server refused the job: {exc}") from exc
            wait = next(waits, None)
            if wait is None:
                raise SubmitError(
                    f"submit: the job server still has no job agent after {sum(backoff_s):.0f} s of retries "
                    f"({NO_AGENT}). Check the head's dashboard agent log "
                    "(<ray temp dir>/session_latest/logs/dashboard_agent.log, /tmp/ray by default): an agent "
                    "whose HTTP port (--dashboard-agent-listen-port, 52365 by default) was held by another "
                    "process when the head started never serves jobs; restart the head with a free port."
                ) from exc
            if out is not None:
                print(f"the job server has no job agent yet; retrying in {wait:g} s", file=out, flush=True)
            sleep(wait)


def follow_logs(client: Any, job_id: str, out: TextIO) -> None:
    """Stream the job's logs to ``out`` until it ends."""

    async def tail() -> None:
        async for chunk in client.tail_job_logs(job_id):
            out.write(chunk)
            out.flush()

    asyncio.run(tail())


def wait_for_job(
    client: Any,
    job_id: str,
    poll_s: float = 1.0,
    timeout_s: float | None = None,
    on_status: Callable[[str], None] | None = None,
) -> str:
    """Poll until the job reaches a terminal status; returns it (``TimeoutError`` past ``timeout_s``)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    last = None
    while True:
        status = str(client.get_job_status(job_id).value)
        if status != last and on_status is not None:
            on_status(status)
        last = status
        if status in TERMINAL:
            return status
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id} still {status} after {timeout_s:.0f} s")
        time.sleep(poll_s)


def failure_report(client: Any, job_id: str, lines: int = FAILED_LOG_LINES) -> str:
    """Why a job failed: Ray's status message and the last ``lines`` lines of its logs."""
    info = client.get_job_info(job_id)
    logs = client.get_job_logs(job_id).rstrip().splitlines() if lines > 0 else []
    # Ray's message repeats the log tail after its first line; the tail is shown below instead.
    first_line = (info.message or "-").splitlines()[0] if info.message else "-"
    message = f"status message: {first_line}"
    if lines <= 0:
        return message
    tail = "\n".join(logs[-lines:]) or "(no output)"
    return f"{message}\nlast {min(lines, len(logs))} log lines:\n{tail}"


OUTPUT_FLAGS = ("--out", "--workdir")


def relative_outputs(command: Sequence[str]) -> list[str]:
    """Output paths in ``command`` that are relative (they would land in the job's temporary copy)."""
    args = list(command)
    return [
        value
        for flag, value in itertools.pairwise(args)
        if flag in OUTPUT_FLAGS and not value.startswith("/") and "://" not in value
    ]


def ray_cli(options: SubmitOptions) -> str:
    """How to call Ray's own job CLI against this cluster (it sends a token only in token mode)."""
    prefix = "RAY_AUTH_MODE=token " if ray_auth_token() else ""
    return f"{prefix}ray job {{verb}} {{job_id}} --address {options.address}"


def run_submit(
    options: SubmitOptions,
    command: Sequence[str],
    wait: bool,
    follow: bool,
    out: TextIO = sys.stdout,
    check: CommandCheck | None = None,
) -> int:
    """``hoprag submit``: submit, then optionally follow logs and/or wait. Exit status: 0 submitted or
    succeeded, 1 the job failed or was stopped, 130 interrupted while waiting (the job keeps running).
    Losing the job server after submission is a :class:`SubmitError` that says the job keeps running."""
    request = job_request(options, command, check)  # a bad command or option fails before any network call
    if options.working_dir is not None:
        for path in relative_outputs(command):
            print(
                f"note: {path!r} is relative: on the cluster it resolves inside the job's uploaded working "
                "directory, which is deleted with the job; give a path on shared storage",
                file=out,
            )
    client = connect(options.address)
    job_id = submit(client, request, out=out)
    cli = ray_cli(options)
    print(f"submitted job {job_id} to {options.address}", file=out, flush=True)
    if not (wait or follow):
        print(f"  status: {cli.format(verb='status', job_id=job_id)}", file=out)
        print(f"  logs:   {cli.format(verb='logs', job_id=job_id)} --follow", file=out)
        return 0
    try:
        if follow:
            try:
                follow_logs(client, job_id, out)
            except Exception as exc:  # e.g. a proxy without WebSockets: keep waiting, just without logs
                print(f"[{job_id}] cannot stream logs ({exc}); waiting for the job to end", file=out)
        status = wait_for_job(
            client, job_id, on_status=lambda s: print(f"[{job_id}] {s}", file=out, flush=True)
        )
        if status == "SUCCEEDED":
            return 0
        # Followed logs are already on screen: then only Ray's status message, else also the log tail.
        report = failure_report(client, job_id, lines=0 if follow else FAILED_LOG_LINES)
    except KeyboardInterrupt:
        print(
            f"\nstopped waiting; job {job_id} keeps running (stop it: {cli.format(verb='stop', job_id=job_id)})",
            file=out,
        )
        return 130
    except Exception as exc:  # the job server went away (port-forward dropped, head restarted, ...)
        raise SubmitError(
            f"submit: lost contact with {options.address} ({type(exc).__name__}: {exc}); job {job_id} "
            f"keeps running: {cli.format(verb='status', job_id=job_id)}"
        ) from exc
    print(f"job {job_id} {status}\n{report}", file=out, flush=True)
    return 1
