"""What a replica's process costs in memory: its RSS now, its peak, and both above the baseline the
replica recorded when it started (a Ray worker with its imports, before the index was loaded)."""

from __future__ import annotations

import resource
import sys
import time
from typing import Any


class ReplicaMemory:
    """Created first thing in a replica's constructor; :meth:`report` is what ``memory()`` returns."""

    def __init__(self) -> None:
        import psutil

        self._process = psutil.Process()
        self.baseline_rss = self._process.memory_info().rss
        self.started = time.perf_counter()
        self.load_seconds: float | None = None

    def loaded(self) -> None:
        """Mark the end of loading (the index, models and vectors the replica needs to answer)."""
        self.load_seconds = time.perf_counter() - self.started

    def report(self) -> dict[str, Any]:
        info = self._process.memory_full_info()  # uss: pages only this process holds
        # ru_maxrss is the process's peak RSS: KiB on Linux, bytes on macOS
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
        mb = 2**20
        return {
            "baseline_rss_mb": round(self.baseline_rss / mb),
            "rss_mb": round(info.rss / mb),
            "uss_mb": round(info.uss / mb),
            "peak_rss_mb": round(peak / mb),
            "peak_above_baseline_mb": round((peak - self.baseline_rss) / mb),
            "rss_above_baseline_mb": round((info.rss - self.baseline_rss) / mb),
            "load_seconds": None if self.load_seconds is None else round(self.load_seconds, 2),
        }
