"""How many threads a model runner may use, and how its idle threads wait.

Every model runner (torch in the embedded LLM, llama.cpp, the embedder) runs inside a process that
shares the machine with others: Ray Data actors side by side, Serve replicas, test workers. A
runner that takes all cores while another process works, with OpenMP's default active waiting,
spins its idle threads against the other process: on 2 cores with one core busy, the embedded
Gemma's decode fell from 10.3 to 1.0 tok/s in torch and from 43.6 to 2.3–4.8 in llama.cpp
(issue 66's measurement; `hoprag bench llm --contention` repeats it). So a runner takes the CPUs
Ray gave it, and idle OpenMP threads sleep (``OMP_WAIT_POLICY=PASSIVE``).
"""

from __future__ import annotations

import math
import os
import sys

PASSIVE_WAIT = {"OMP_WAIT_POLICY": "PASSIVE"}
"""Set before the OpenMP runtime loads (torch, llama.cpp's ggml): libgomp reads it once, at load."""


def wait_passively() -> None:
    """Make this process's (and its children's) OpenMP threads sleep when idle, unless the user
    chose otherwise. Call it before torch or llama.cpp is imported: the CLI's entry point does, and
    a local Ray cluster's workers inherit the setting."""
    for name, value in PASSIVE_WAIT.items():
        os.environ.setdefault(name, value)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask; a container's cpuset counts)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def runner_threads() -> int:
    """Threads for a model runner in this process: the CPUs Ray assigned to this actor, task or
    replica (a fraction rounds up to one), else ``OMP_NUM_THREADS`` where set, else the CPUs the
    process may use; never more than the latter. In a Ray driver (no assignment) it is the process's CPUs."""
    cpus = usable_cpus()
    ray = sys.modules.get("ray")  # a Ray worker has imported it; importing it here would cost seconds
    try:
        if ray is not None and ray.is_initialized():
            assigned = ray.get_runtime_context().get_assigned_resources().get("CPU")
            if assigned:
                return max(1, min(cpus, math.ceil(float(assigned) - 1e-9)))
    except Exception:  # no Ray, or a runtime context that cannot say: not inside a Ray worker
        pass
    chosen = os.environ.get("OMP_NUM_THREADS", "")  # a launcher's choice (pytest-xdist workers: cores / N)
    if chosen.isdigit() and int(chosen) > 0:
        return min(cpus, int(chosen))
    return cpus
