"""What every ``hoprag bench NAME`` shares: timing with warm-up, a baseline measured in the same run,
the run's provenance (machine, command, date, version) and its output (one JSON line with
``--json``, else a table for people), also kept as ``WORKDIR/NAME-bench.json`` when the benchmark has a work directory.

Machines here are shared and noisy, so a benchmark compares a candidate with a baseline measured
in the same process, taking turns (:func:`interleaved`), and reports ratios next to the seconds;
docs/benchmarks.md records each result with the command that produced it (``report["command"]``).
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Timing:
    """Wall seconds of the timed calls (warm-up calls excluded)."""

    seconds: tuple[float, ...]

    @property
    def best(self) -> float:
        return min(self.seconds)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    def to_dict(self) -> dict[str, Any]:
        return {"median_s": round(self.median, 6), "best_s": round(self.best, 6), "runs": len(self.seconds)}


def time_call(fn: Callable[[], object], *, warmup: int = 1, repeat: int = 3) -> Timing:
    """Call ``fn`` ``warmup`` times untimed (caches, lazy loads, JIT), then ``repeat`` times timed."""
    if repeat < 1 or warmup < 0:
        raise ValueError("repeat must be >= 1 and warmup >= 0")
    for _ in range(warmup):
        fn()
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - started)
    return Timing(tuple(seconds))


def interleaved(
    candidates: Mapping[str, Callable[[], object]], *, warmup: int = 1, repeat: int = 3
) -> dict[str, Timing]:
    """Time several variants taking turns (A, B, A, B, ...), so that a slow spell of a shared machine
    lands on all of them rather than on one; the first is the baseline of :func:`ratios`."""
    if repeat < 1 or warmup < 0:
        raise ValueError("repeat must be >= 1 and warmup >= 0")
    for _ in range(warmup):
        for fn in candidates.values():
            fn()
    seconds: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(repeat):
        for name, fn in candidates.items():
            started = time.perf_counter()
            fn()
            seconds[name].append(time.perf_counter() - started)
    return {name: Timing(tuple(values)) for name, values in seconds.items()}


def ratios(timings: Mapping[str, Timing]) -> dict[str, float]:
    """Each variant's median as a multiple of the first's (the baseline): 0.5 is twice as fast."""
    baseline = next(iter(timings.values())).median
    return {
        name: round(t.median / baseline, 3) if baseline > 0 else float("nan") for name, t in timings.items()
    }


def provenance(name: str, argv: Iterable[str] | None = None) -> dict[str, Any]:
    """Where a result comes from: the benchmark, the command that reruns it, when, hoprag's version
    and the machine (:func:`hoprag.machine.machine_description`)."""
    from hoprag import __version__
    from hoprag.machine import machine_description

    args = list(sys.argv[1:] if argv is None else argv)
    return {
        "bench": name,
        "command": shlex.join(["hoprag", *args]),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "hoprag": __version__,
        "machine": machine_description(),
    }


def publish(
    name: str,
    results: Mapping[str, Any],
    args: argparse.Namespace,
    table: Callable[[dict[str, Any]], Iterable[str]] | None = None,
) -> dict[str, Any]:
    """Print a benchmark's report and keep it: ``results`` with :func:`provenance` first.

    ``--json`` (``args.json``) prints one JSON line; otherwise the provenance and ``table(report)``'s
    lines (indented JSON for a benchmark without a table). With a work directory
    (``args.workdir``) the report is also written to ``WORKDIR/NAME-bench.json``. Returns the report.
    """
    report = {**provenance(name), **results}
    if getattr(args, "json", False):
        print(json.dumps(report, default=str), flush=True)
    else:
        print(f"{report['command']}\n{report['machine']}; {report['date']}; hoprag {report['hoprag']}")
        lines = table(report) if table is not None else [json.dumps(dict(results), indent=1, default=str)]
        for line in lines:
            print(line)
    workdir = getattr(args, "workdir", None)
    if workdir is not None:
        out = Path(workdir) / f"{name}-bench.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    return report


def peak_rss_mib() -> int:
    """This process's own peak RSS in MiB: ``VmHWM``, which exec resets (``ru_maxrss`` keeps a
    forked child's parent's peak from before the fork); ``ru_maxrss`` where there is no /proc."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024)
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def add_json_argument(parser: argparse.ArgumentParser) -> None:
    """The ``--json`` flag every benchmark has."""
    parser.add_argument("--json", action="store_true", help="print one line of JSON instead of a table")
