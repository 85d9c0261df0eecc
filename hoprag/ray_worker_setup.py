"""Setup run in every worker process of a local cluster that hoprag starts.

Kept apart from :mod:`hoprag.ray_runtime` and free of heavy imports: each Ray worker imports this
module when it starts, before its first task.
"""

from __future__ import annotations

import logging


def without_state_api() -> None:
    """Worker setup for a local cluster without the dashboard, hence without Ray's State API.

    Ray Train's placement-group cleaner polls the State API once a second and logs a warning per
    failed poll (hundreds per training run). It only matters when a controller dies without
    cleaning up, and a local cluster ends with its driver anyway, so the warnings are silenced.
    """
    logging.getLogger("ray.train.v2._internal.execution.controller.placement_group_cleaner").setLevel(
        logging.ERROR
    )
