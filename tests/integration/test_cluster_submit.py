"""`hoprag submit` against a real Ray head (`ray start --head --block` on loopback, token auth on).

The head is this test's own: its temp dir and auth token are private to it, and it is stopped by
signalling its ``ray start`` process (``ray stop`` would also stop the test session's cluster). It starts
while hoprag's own local cluster (the session's) runs, and keeps Ray's default dashboard agent port,
52365, as a user's `ray start --head` would: hoprag's local clusters must leave that port free, or
the head's job server has no agent ("No available agent to submit job").

The head's fixed ports come from :func:`hoprag.ports.pick_free_port` (below the ephemeral range):
once in CI a port from that range was handed to an outgoing connection before the head's client
server bound it, and the whole head exited ("Some Ray subprocesses exited unexpectedly").
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hoprag.ports import pick_free_port, port_is_free

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_AGENT_PORT = 52365
SAMPLE = ROOT / "hoprag" / "data" / "sample"


@pytest.fixture(scope="module")
def ray_head(tmp_path_factory, ray_cluster) -> Iterator[dict]:
    """A Ray head on loopback beside hoprag's local cluster; yields the job server URL and the
    environment a client needs."""
    token = secrets.token_hex(32)
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        # The venv's python is the cluster's `python`, as an image's would be.
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": token,
        "RAY_USAGE_STATS_ENABLED": "0",
        # This head shares a CI machine with other work: its workers (the jobs' Ray Data actors and
        # Ray Train workers) compete at normal priority, as hoprag's local clusters' do; Ray's
        # default (nice 15, for dedicated nodes) starves them beside any busy process.
        "RAY_worker_niceness": "0",
    }
    env.pop("RAY_ADDRESS", None)
    log = tmp_path_factory.mktemp("head") / "ray-start.log"
    # `ray start` gives up when its node has not registered in a fixed 30 s, which a loaded machine
    # (load ~10) can exceed: started again on fresh ports, as hoprag's own clusters are
    # (hoprag.ray_runtime.retry_slow_start).
    for attempt in range(1, 4):
        written = log.stat().st_size if log.exists() else 0
        head, url, temp_dir = _start_head(bin_dir, env, log)
        if not _gave_up_starting(head, log, written) or attempt == 3:
            break
        with contextlib.suppress(ProcessLookupError):  # what the attempt left running
            os.killpg(head.pid, signal.SIGKILL)
        shutil.rmtree(temp_dir, ignore_errors=True)
    try:
        _wait_for_job_server(url, token, head, log)
        yield {"url": url, "env": env, "report": lambda: _head_report(head, log, temp_dir)}
    finally:
        died_early = head.poll() is not None
        # SIGTERM to `ray start --block` makes the node drain (up to 30 s) before it stops its
        # processes: an idle head is gone in ~2 s, one that ran jobs took the whole 30 s. This head
        # and its temp dir are thrown away, so after 5 s its process group is killed.
        head.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            head.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError):  # whatever is left (nothing, once it stopped itself)
            os.killpg(head.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            head.wait(timeout=30)
        if not died_early:  # a dead head's logs stay for diagnosis; the report names the folder
            shutil.rmtree(temp_dir, ignore_errors=True)


def _start_head(bin_dir: str, env: dict, log: Path) -> tuple[subprocess.Popen, str, Path]:
    """``ray start --head --block`` on free ports; (process, job server URL, its temp dir)."""
    taken: set[int] = set()
    dashboard = pick_free_port(taken)
    ports = {
        "--port": pick_free_port(taken),
        "--dashboard-port": dashboard,
        "--ray-client-server-port": pick_free_port(taken),
        "--metrics-export-port": pick_free_port(taken),
    }
    if not port_is_free(DEFAULT_AGENT_PORT):  # held by a process outside this test session
        ports["--dashboard-agent-listen-port"] = pick_free_port(taken)
    temp_dir = Path("/tmp") / f"hoprag-head-{secrets.token_hex(3)}"  # short: Ray's socket paths
    command = [
        str(Path(bin_dir) / "ray"),
        "start",
        "--head",
        "--block",
        "--node-ip-address=127.0.0.1",
        "--dashboard-host=127.0.0.1",
        "--include-dashboard=true",
        "--num-cpus=6",  # more logical CPUs than cores: Ray Data stages must not starve
        f"--temp-dir={temp_dir}",
        *(f"{flag}={port}" for flag, port in ports.items()),
    ]
    with log.open("a") as out:
        head = subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    return head, f"http://127.0.0.1:{dashboard}", temp_dir


def _gave_up_starting(head: subprocess.Popen, log: Path, offset: int) -> bool:
    """Whether ``ray start`` exited because its node did not come up in time (its output from
    ``offset`` on; the job server answering later is checked by _wait_for_job_server)."""
    from hoprag.ray_runtime import SLOW_START

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        output = log.read_text()[offset:]
        if head.poll() is not None:
            return SLOW_START in log.read_text()[offset:]
        if "Ray runtime started" in output:
            return False
        time.sleep(0.5)
    return False


def _head_report(head: subprocess.Popen, log: Path, temp_dir: Path) -> str:
    """What a failed assertion needs to tell a hoprag defect from a head that died under it."""
    if head.poll() is None:
        return "(the Ray head is still running)"
    exits = temp_dir / "session_latest" / "logs" / "ray_process_exit.log"
    why = exits.read_text()[-2000:] if exits.is_file() else "(no ray_process_exit.log)"
    return (
        f"\n--- the Ray head exited with {head.returncode}; its logs: {temp_dir}/session_latest/logs\n"
        f"{why}\n--- ray start output:\n{log.read_text()[-2000:]}"
    )


def _wait_for_job_server(url: str, token: str, head: subprocess.Popen, log: Path) -> None:
    import httpx

    deadline = time.monotonic() + 300  # a head starts in ~10 s idle, much longer on a busy machine
    while time.monotonic() < deadline:
        if head.poll() is not None:
            pytest.fail(f"ray start exited with {head.returncode}:\n{log.read_text()[-3000:]}")
        try:
            r = httpx.get(f"{url}/api/version", headers={"Authorization": f"Bearer {token}"}, timeout=2)
            if r.status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    pytest.fail(f"the job server at {url} did not come up:\n{log.read_text()[-3000:]}")


def _hoprag(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hoprag_cli", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=480,
    )


def test_submit_index_then_train_jobs_to_success(ray_head, tmp_path) -> None:
    out = tmp_path / "index"
    run = _hoprag(
        [
            "submit",
            "--address",
            ray_head["url"],
            "--wait",
            "--follow",
            "--submission-id",
            "test-index-ok",
            "--",
            "index",
            "--corpus",
            str(SAMPLE),
            "--out",
            str(out),
            "--set",
            "llm.backend=reference",
            "--set",
            f"llm.reference.world={SAMPLE / 'raw' / 'world.json'}",
        ],
        ray_head["env"],
    )
    assert run.returncode == 0, run.stdout + run.stderr + ray_head["report"]()
    assert "submitted job test-index-ok" in run.stdout and "[test-index-ok] SUCCEEDED" in run.stdout
    assert "index written to" in run.stdout  # the job's own output, streamed by --follow
    assert (out / "manifest.json").is_file()
    stats = _hoprag(["index", "stats", str(out), "--json"], ray_head["env"])
    assert stats.returncode == 0 and json.loads(stats.stdout)["documents"] == 60
    # The runbook's next stage: Ray Train + DeepSpeed as a job on the same head (a few steps).
    glm = tmp_path / "glm"
    train = _hoprag(
        [
            *("submit", "--address", ray_head["url"], "--wait", "--submission-id", "test-train-ok", "--"),
            *("train", "--index", str(out), "--out", str(glm)),
            *("--config", "training/configs/glm-embedded-cpu.yaml", "--max-steps", "2"),
        ],
        ray_head["env"],
    )
    assert train.returncode == 0, train.stdout + train.stderr + ray_head["report"]()
    assert "[test-train-ok] SUCCEEDED" in train.stdout
    assert (glm / "retriever").is_dir()  # exported for serving and evaluation


def test_a_failing_job_shows_its_status_and_logs(ray_head, tmp_path) -> None:
    missing = tmp_path / "no-such-corpus.jsonl"
    run = _hoprag(
        [
            "submit",
            "--address",
            ray_head["url"],
            "--wait",
            "--submission-id",
            "test-index-fails",
            "--",
            "index",
            "--corpus",
            str(missing),
            "--out",
            str(tmp_path / "index"),
        ],
        ray_head["env"],
    )
    assert run.returncode == 1, run.stdout + run.stderr + ray_head["report"]()
    assert "job test-index-fails FAILED" in run.stdout
    assert "exit code 2" in run.stdout  # Ray's status message
    assert str(missing) in run.stdout  # hoprag's own error, from the job's log tail
    # Without a token the job server refuses the client (token auth is on).
    no_token = {**ray_head["env"], "RAY_AUTH_MODE": "disabled"}
    refused = _hoprag(["submit", "--address", ray_head["url"], "--", "index", "--out", "x"], no_token)
    assert refused.returncode == 2 and "Unauthorized" in refused.stderr
