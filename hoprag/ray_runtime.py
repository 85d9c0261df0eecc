"""Starting or joining a Ray cluster with settings that work on small machines too."""

from __future__ import annotations

import logging
import os

from pydantic import BaseModel, Field

logger = logging.getLogger(__name__)


class RayConfig(BaseModel):
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
    """Connect to or start Ray once per process (a no-op if already initialized)."""
    import ray

    if ray.is_initialized():
        return
    config = config or RayConfig()
    # Inside a Ray job (`hoprag submit`) Ray sets RAY_ADDRESS: join the job's cluster, as ray.init() does.
    address = config.address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, log_to_driver=True)
        return
    cores = os.cpu_count() or 2
    runtime_env = {} if config.include_dashboard else {"worker_process_setup_hook": _without_state_api}
    ray.init(
        num_cpus=config.num_cpus or max(4, 2 * cores),
        object_store_memory=(config.object_store_memory_mb or 512) * 1024**2,
        include_dashboard=config.include_dashboard,
        log_to_driver=True,
        runtime_env=runtime_env,
    )
    logger.info("started a local Ray cluster: %s", ray.cluster_resources())


def _without_state_api() -> None:
    """Worker setup for a local cluster without the dashboard, hence without Ray's State API.

    Ray Train's placement-group cleaner polls the State API once a second and logs a warning per
    failed poll (hundreds per training run). It only matters when a controller dies without
    cleaning up, and a local cluster ends with its driver anyway, so the warnings are silenced.
    """
    logging.getLogger("ray.train.v2._internal.execution.controller.placement_group_cleaner").setLevel(
        logging.ERROR
    )
