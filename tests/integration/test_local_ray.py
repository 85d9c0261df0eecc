"""Which Ray cluster a hoprag command uses when none is configured: always a new local one of its
own, which leaves Ray's well-known ports to a user's own `ray start --head`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.local_ray import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

DEFAULT_AGENT_PORT = 52365  # Ray's default dashboard agent HTTP port: a head's job server needs it

_PROBE = """
import json, logging, ray
logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
from hoprag.ray_runtime import init_ray
init_ray()
node = ray.nodes()[0]
print(json.dumps({"gcs": ray.get_runtime_context().gcs_address, "agent_port": node["DashboardAgentListenPort"]}))
"""


def test_a_dead_recorded_head_is_never_joined(dead_recorded_head) -> None:
    recorded = (Path(dead_recorded_head["RAY_TMPDIR"]) / "ray" / "ray_current_cluster").read_text()
    run = subprocess.run(
        [sys.executable, "-c", _PROBE],
        env=dead_recorded_head,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    probe = json.loads(run.stdout.strip().splitlines()[-1])
    assert probe["gcs"] != recorded
    assert f"started a local Ray cluster at {probe['gcs']}" in run.stderr  # one line says which cluster
    assert probe["agent_port"] not in (DEFAULT_AGENT_PORT, -1)  # a free port, and its HTTP server is up


def test_hoprag_local_clusters_leave_the_default_agent_port_to_the_user(ray_cluster) -> None:
    import ray

    ports = [node["DashboardAgentListenPort"] for node in ray.nodes() if node["Alive"]]
    assert ports and DEFAULT_AGENT_PORT not in ports


def test_every_worker_of_a_local_cluster_runs_hoprags_setup_without_a_runtime_env(ray_cluster) -> None:
    """The worker setup (Ray Train's State-API warnings silenced) reaches workers through the
    node's environment, not a job runtime environment (which would cost each worker a pass
    through the runtime-env agent), and leaves the driver's environment as it was."""
    import logging
    import os

    import ray

    cleaner = "ray.train.v2._internal.execution.controller.placement_group_cleaner"

    @ray.remote(num_cpus=0.1)
    def cleaner_log_level() -> int:
        return logging.getLogger(cleaner).level

    @ray.remote(num_cpus=0.1, runtime_env={"env_vars": {"HOPRAG_PROBE": "1"}})
    def with_its_own_runtime_env() -> tuple[int, str | None]:
        return logging.getLogger(cleaner).level, os.environ.get("HOPRAG_PROBE")

    assert ray.get(cleaner_log_level.remote()) == logging.ERROR
    assert ray.get(with_its_own_runtime_env.remote()) == (logging.ERROR, "1")
    assert ray.get_runtime_context().runtime_env == {}
    assert not any("SETUP_HOOK" in name for name in os.environ)


def test_a_local_clusters_workers_run_at_the_starting_processes_priority(ray_cluster) -> None:
    """Ray's default worker nice value (15) would hand the CPU to any other busy process on the
    machine; a local cluster's tasks and actors run at the nice value of the process that started it."""
    import os

    import psutil
    import ray

    @ray.remote(num_cpus=0)
    def nice_value() -> int:
        return psutil.Process().nice()

    @ray.remote(num_cpus=0)
    class Probe:
        def nice_value(self) -> int:
            return psutil.Process().nice()

    own = os.nice(0)
    probe = Probe.remote()
    assert ray.get(nice_value.remote(), timeout=120) == own
    assert ray.get(probe.nice_value.remote(), timeout=120) == own
    ray.kill(probe)
