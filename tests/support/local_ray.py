"""Helpers for tests of how hoprag commands find (or start) their Ray cluster."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "hoprag" / "data" / "sample"
SAMPLE_WORLD = SAMPLE / "raw" / "world.json"  # the reference extractor's facts for the sample


def _unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def dead_head_environment() -> Iterator[dict[str, str]]:
    """An environment whose Ray temp dir records a `ray start` head that is gone.

    Ray's ``ray_current_cluster`` file is what a bare ``ray.init()`` joins; here it names a loopback
    port nobody listens on, as after a head killed by a signal. The temp dir is private (and short:
    Ray's socket paths have a length limit), so the machine's own /tmp/ray is untouched.
    """
    temp = Path("/tmp") / f"hoprag-dead-{secrets.token_hex(3)}"
    (temp / "ray").mkdir(parents=True)
    (temp / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{_unused_port()}")
    env = {**os.environ, "RAY_TMPDIR": str(temp)}
    env.pop("RAY_ADDRESS", None)
    try:
        yield env
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def run_reference_index(
    out: Path, env: dict[str, str], timeout_s: float = 600
) -> subprocess.CompletedProcess:
    """``hoprag index`` of the packaged sample corpus with the reference extractor (no LLM, ~20 s)."""
    return subprocess.run(
        [
            *(sys.executable, "-m", "hoprag_cli", "index", "--corpus", str(SAMPLE), "--out", str(out)),
            *(
                "--set",
                "llm.backend=reference",
                "--set",
                f"llm.reference.world={SAMPLE_WORLD}",
            ),
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout_s,
    )


def build_reference_index(out: Path, gcs_address: str) -> Path:
    """What :func:`run_reference_index` builds, in this process on the session's cluster (no CLI
    process, no cluster of its own): for tests that need the index, not the command."""
    from hoprag.llm.factory import LLMBackendConfig
    from hoprag.ray_runtime import RayConfig
    from indexing.config import IndexConfig
    from indexing.corpus import read_corpus
    from indexing.pipeline import build_index

    config = IndexConfig(
        llm=LLMBackendConfig.model_validate(
            {"backend": "reference", "reference": {"world": str(SAMPLE_WORLD)}}
        ),
        ray=RayConfig(address=gcs_address),
    )
    build_index(out, config, corpus=read_corpus(SAMPLE))
    return out


def own_ray_train_workers() -> list[object]:
    """The Ray Train worker processes of this test process's own local cluster (``psutil.Process``).

    The session cluster's raylet is a child of the pytest process, so its workers are descendants;
    a training job someone else runs on the same machine (another cluster) is never among them, and
    a test that kills a worker must not kill theirs."""
    import psutil

    workers = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if "RayTrainWorker" in " ".join(proc.cmdline()):
                workers.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue  # ended while listed, or not ours to read
    return workers
