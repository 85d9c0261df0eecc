"""Starting or joining a Ray cluster with settings that work on small machines too."""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from pydantic import Field

from hoprag.config import StrictModel
from hoprag.logs import is_quiet, route_framework_logs, worker_output_to_log_file
from hoprag.ray_worker_setup import without_state_api

logger = logging.getLogger(__name__)
T = TypeVar("T")

# Nice value of a local cluster's worker processes (Ray's own default is 15; see start_local_ray).
LOCAL_WORKER_NICENESS = 0

# The GCS address of the local cluster this process started (it ends with this process), if any.
_started_here: str | None = None


class RayConfig(StrictModel):
    """Where to run. Without ``address`` a local cluster is started in-process."""

    address: str | None = Field(
        default=None,
        description="Existing cluster ('auto', 'ray://host:10001', ...); None joins $RAY_ADDRESS if set "
        "(as inside a Ray job), else starts a local one.",
    )
    num_cpus: int | None = Field(
        default=None,
        ge=1,
        description="Logical CPUs of a local cluster. Default: 2x the cores (at least 4), "
        "so Ray Data's read and map stages are not starved by an LLM actor on 2-core machines.",
    )
    object_store_memory_mb: int | None = Field(default=None, ge=64, description="Local object store size.")
    include_dashboard: bool = Field(default=False, description="Start the dashboard for a local cluster.")


def init_ray(config: RayConfig | None = None) -> None:
    """Connect to or start Ray once per process (a no-op if already initialized).

    With no address configured and ``RAY_ADDRESS`` unset, a new local cluster is always started
    (``address="local"``): a bare ``ray.init()`` would join whatever cluster the last ``ray start``
    on this machine recorded in Ray's temp dir, dead or alive. Which cluster is used is logged once.
    """
    import ray

    if ray.is_initialized():
        return
    if is_quiet():  # Ray's and Ray Data's console handlers exist once imported: move them to the log file
        import ray.data

        route_framework_logs()
    config = config or RayConfig()
    # Inside a Ray job (`hoprag submit`) Ray sets RAY_ADDRESS: join the job's cluster, as ray.init() does.
    address = config.address or os.environ.get("RAY_ADDRESS")
    if address and address != "local":
        ray.init(address=address, log_to_driver=True)
        which = "joined the Ray cluster at %s: %s"
    else:
        start_local_ray(
            num_cpus=config.num_cpus or max(4, 2 * (os.cpu_count() or 2)),
            object_store_memory_mb=config.object_store_memory_mb or 512,
            include_dashboard=config.include_dashboard,
        )
        which = "started a local Ray cluster at %s (ends with this process): %s"
    worker_output_to_log_file()
    logger.info(which, ray.get_runtime_context().gcs_address, ray.cluster_resources())


def start_local_ray(
    num_cpus: int,
    object_store_memory_mb: int,
    include_dashboard: bool = False,
    log_to_driver: bool = True,
) -> str:
    """Start a new local Ray cluster owned by this process; returns its GCS address.

    It never joins an existing cluster, and it leaves Ray's well-known ports to a user's own
    ``ray start --head`` on the same machine: its GCS and metrics ports are random (as in any
    ``ray.init``), and so is its dashboard agent's HTTP port, which ``ray.init`` would otherwise
    bind at 52365 — the port a head's job server needs (see :func:`_agent_on_a_free_port`).

    Its workers run at the priority of the process that started it. Ray starts workers at nice 15
    so that on a dedicated node they never delay its raylet; on a machine shared with other work
    (a laptop, a CI runner, a dev box) that hands the CPU to every other busy process: beside two
    CPU-bound processes on 2 cores, a Serve app's proxy misses its 5 s ready check and its replicas
    had not started after 8 minutes. A local cluster is this process's own work, so it competes
    as this process does.
    """
    import ray

    from hoprag.threads import wait_passively

    wait_passively()  # the node's workers (model runners among them) inherit it: hoprag/threads.py
    hook = None if include_dashboard else f"{without_state_api.__module__}.{without_state_api.__name__}"

    def start() -> None:
        with _agent_on_a_free_port(), _workers_run_setup(hook):
            ray.init(
                address="local",
                num_cpus=num_cpus,
                object_store_memory=object_store_memory_mb * 1024**2,
                include_dashboard=include_dashboard,
                log_to_driver=log_to_driver,
                _system_config={"worker_niceness": LOCAL_WORKER_NICENESS},
            )

    retry_slow_start(start, ray.shutdown)
    global _started_here
    _started_here = ray.get_runtime_context().gcs_address
    return _started_here


SLOW_START = "timed out during startup"
"""Ray's error when a new node's raylet has not registered within its fixed 30 s (no setting
lengthens it): on a loaded machine (load ~10) a head or a local cluster can need longer."""


def retry_slow_start(start: Callable[[], T], clean_up: Callable[[], object], attempts: int = 3) -> T:
    """``start()``, started again (after ``clean_up()``) when Ray gave up waiting for the node to
    come up (:data:`SLOW_START`), up to ``attempts`` times; any other failure is raised at once."""
    for attempt in range(1, attempts + 1):
        try:
            return start()
        except Exception as exc:
            if SLOW_START not in str(exc) or attempt == attempts:
                raise
            logger.warning(
                "the Ray node %s (attempt %d of %d); starting it again", SLOW_START, attempt, attempts
            )
            clean_up()
    raise AssertionError("unreachable")


def owns_local_cluster() -> bool:
    """Whether this process is connected to a local cluster it started (so ``ray.shutdown()`` ends
    the whole cluster, every actor and Serve replica with it), not to a cluster it joined."""
    import ray

    return ray.is_initialized() and ray.get_runtime_context().gcs_address == _started_here


@contextmanager
def _workers_run_setup(hook: str | None) -> Iterator[None]:
    """Within the block, a Ray node started by ``ray.init`` has every worker process it starts run
    ``hook`` (a ``module.function`` path) before its first task.

    ``ray.init(runtime_env={"worker_process_setup_hook": ...})`` does the same through a job
    runtime environment, and a job with a runtime environment cannot use the node's pre-started
    workers: each worker then also passes through the runtime-env agent, about 0.3 s more per
    worker process on 2 cores (Serve replicas, Ray Data actors, Ray Train workers). Ray's workers
    read the hook from an environment variable that the runtime environment would have set
    (``ray_constants.WORKER_PROCESS_SETUP_HOOK_ENV_VAR``); set in the environment the node's
    processes inherit, it reaches every worker without one. The driver's environment is restored
    after the block. A Ray without that variable keeps its own behaviour: no hook runs.
    """
    from ray._private import ray_constants

    name = getattr(ray_constants, "WORKER_PROCESS_SETUP_HOOK_ENV_VAR", None)
    if hook is None or name is None or name in os.environ:
        yield
        return
    os.environ[name] = hook
    try:
        yield
    finally:
        os.environ.pop(name, None)


@contextmanager
def _agent_on_a_free_port() -> Iterator[None]:
    """Within the block, a Ray node started by ``ray.init`` binds its dashboard agent's HTTP server
    to a free port instead of Ray's default 52365.

    ``ray.init`` has no argument for that port (``ray start`` has ``--dashboard-agent-listen-port``),
    and a local cluster holding 52365 leaves a user's own head without a job server
    ("No available agent to submit job"). The agent supports port 0 (any free port) and records
    the port it bound in the session directory, which is where Ray's own components look it up.
    """
    from ray._private.parameter import RayParams

    original = RayParams.__init__
    if "dashboard_agent_listen_port" not in inspect.signature(original).parameters:
        logger.debug("this Ray's RayParams has no dashboard_agent_listen_port; keeping Ray's default")
        yield
        return

    @functools.wraps(original)
    def with_free_agent_port(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("dashboard_agent_listen_port", 0)
        original(self, *args, **kwargs)

    RayParams.__init__ = with_free_agent_port  # type: ignore[method-assign]
    try:
        yield
    finally:
        RayParams.__init__ = original  # type: ignore[method-assign]
