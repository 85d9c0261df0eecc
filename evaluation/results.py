"""The stored per-question results of an evaluation: where they live, how they are read, appended
and reused. One JSON line per finished question in ``EVAL_DIR/results/<benchmark>/<system>.jsonl``;
the runner appends, the report and the retrieval shortcut read."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from evaluation.config import EvalConfig, SystemSpec


def results_path(out: Path, bench: str, system: str) -> Path:
    """The results file of one (benchmark, system) pair under the evaluation directory ``out``."""
    return Path(out) / "results" / bench / f"{system}.jsonl"


def read_results(path: Path) -> dict[str, dict[str, Any]]:
    """Finished results by question id; a torn last line (killed mid-write) is ignored."""
    done: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return done
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        done[record["id"]] = record
    return done


def read_pair_results(out: Path, bench: str, system: str) -> dict[str, dict[str, Any]]:
    """:func:`read_results` of one (benchmark, system) pair of the evaluation at ``out``."""
    return read_results(results_path(out, bench, system))


def reusable_results(
    done: dict[str, dict[str, Any]], config: EvalConfig, system: SystemSpec
) -> dict[str, dict[str, Any]]:
    """The stored results a re-run keeps: for QA systems only those judged with today's judge
    prompts (a changed prompt, or a judge switched on or off since, means judging again)."""
    if system.kind != "qa":
        return done
    versions = config.judge.prompt_versions()
    return {q: r for q, r in done.items() if r.get("judge_prompts", {}) == versions}


@contextmanager
def appending(path: Path) -> Iterator[IO[str]]:
    """The results file open for appending, after ending a line torn by a killed run; the caller
    writes one JSON line per result and flushes it, so nothing finished is lost on a crash."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_file() and path.stat().st_size and not path.read_bytes().endswith(b"\n"):
        with path.open("a", encoding="utf-8") as fh:
            fh.write("\n")
    with path.open("a", encoding="utf-8") as fh:
        yield fh


def error_counts(records: list[dict[str, Any]]) -> dict[str, int]:
    """How many records failed, by error kind (the part of ``error`` before the first colon)."""
    return dict(Counter(r["error"].split(":")[0] for r in records if r.get("error")))
