"""What produced the stored results of a (benchmark, system) pair, and the check that a re-run of
``hoprag eval run`` reuses them only when that is still what it would compute.

Results are reused by question id (an interrupted evaluation resumes). Without this check a re-run
whose system changed under the same name (another retriever spec, weights retrained in place, an
index rebuilt, another LLM or adapter, other QA settings) would report the old results under the new
definition. Each pair's settings are recorded next to its results, in
``EVAL_DIR/results/<benchmark>/<system>.provenance.json``; a re-run with different ones is refused,
naming what changed, before Ray starts.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from evaluation.config import BenchmarkSpec, EvalConfig, SystemSpec
from evaluation.results import read_results, results_path

PROVENANCE_SUFFIX = ".provenance.json"


class StaleResultsError(ValueError):
    """Stored results that a re-run would compute differently (the system changed under its name)."""


def provenance_path(out: Path, bench: str, system: str) -> Path:
    """Where the settings that produced a pair's results are recorded."""
    return results_path(out, bench, system).with_suffix(PROVENANCE_SUFFIX)


def pair_provenance(config: EvalConfig, bench: BenchmarkSpec, system: SystemSpec) -> dict[str, Any]:
    """Everything that decides a pair's per-question results, as plain JSON values.

    The index by its current snapshot; each retriever directory the spec names by the content of
    its ``retriever.json`` and weights; the LLM by its model id (which holds the adapter's content
    hash; retrieval systems use it to link questions without stored links); the QA settings the
    system's pipeline reads; the recall cut-offs. Not the question ``limit``: raising it is how a
    run is extended."""
    from hoprag.kg.store import read_manifest
    from hoprag.llm.factory import expected_model_id
    from hoprag.retrieval.loading import BUILT_IN, retriever_spec_parts

    record: dict[str, Any] = {
        "system": system.model_dump(mode="json", exclude={"name"}),
        # the snapshot's name is unique per build or update (time, pid, random part); the index's
        # path is not recorded, so an evaluation directory resumes where the volume is mounted elsewhere
        "index": {"snapshot": read_manifest(Path(bench.index)).get("snapshot")},
        "questions": {"split": bench.split, "where": bench.where},
        "llm": expected_model_id(config.llm),
        "ks": list(config.ks),
    }
    if system.retriever:
        record["retriever_weights"] = {
            part: _retriever_fingerprint(part)
            for part in retriever_spec_parts(system.retriever)
            if part not in BUILT_IN
        }
    if system.retriever and "ppr" in retriever_spec_parts(system.retriever):
        record["ppr"] = config.ppr.model_dump(mode="json")
    if system.pipeline in ("rag", "plan"):
        record["retrieve"] = config.retrieve.model_dump(mode="json")
    if system.pipeline == "plan":
        record["planner"] = config.planner_for(system).model_dump(mode="json")
    return record


def check_stored_results(config: EvalConfig) -> None:
    """Refuse a re-run whose stored results came from other settings than this config's: one
    :class:`StaleResultsError` naming every such pair, what changed, and what to do. Stored results
    written before provenance was recorded are kept and get today's record (with a note)."""
    problems: list[str] = []
    for bench in config.benchmarks:
        for system in config.systems:
            if not results_path(config.out, bench.name, system.name).is_file():
                continue  # nothing stored to check; the pair's run records its settings
            try:
                verify_pair(config, bench, system)
            except StaleResultsError as exc:
                problems.append(str(exc))
    if problems:
        raise StaleResultsError(
            "eval run: stored results were computed with other settings than this config's "
            "(give a new --out, rename the system, or delete the named file to recompute it):\n  "
            + "\n  ".join(problems)
        )


def verify_pair(config: EvalConfig, bench: BenchmarkSpec, system: SystemSpec) -> dict[str, Any]:
    """The pair's provenance, after checking it against the stored one and recording it where
    there was none (stored results from before it was recorded: kept, with a note)."""
    from hoprag.glm.artifact import RetrieverLoadError
    from hoprag.kg.store import KGIndexError

    try:
        current = pair_provenance(config, bench, system)
    except (KGIndexError, RetrieverLoadError) as exc:
        raise ValueError(f"benchmark {bench.name}, system {system.name}: {exc}") from exc
    path = provenance_path(config.out, bench.name, system.name)
    stored_results = results_path(config.out, bench.name, system.name)
    if path.is_file():
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise StaleResultsError(f"{path}: unreadable ({exc})") from exc
        changed = _differences(stored, current)
        if changed and read_results(stored_results):
            raise StaleResultsError(f"{stored_results}: " + "; ".join(changed))
        if not changed:
            return current
    elif read_results(stored_results):
        print(
            f"[eval] note: {stored_results} has no record of the settings that produced it (written "
            "before hoprag recorded them); its results are kept as computed with this config's",
            flush=True,
        )
    from hoprag.kg.store import write_json_atomic

    write_json_atomic(path, current)
    return current


def _differences(stored: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """'key: old → new' for every top-level entry that differs (long values shortened)."""
    out = []
    for key in sorted(set(stored) | set(current)):
        if stored.get(key) != current.get(key):
            out.append(f"{key}: {_short(stored.get(key))} → {_short(current.get(key))}")
    return out


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, sort_keys=True) if value is not None else "(none)"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _retriever_fingerprint(part: str) -> str:
    """A 12-hex-digit hash of a retriever directory's ``retriever.json`` and weights (the weights by
    size and sampled chunks, so a t5-large retriever is hashed in milliseconds)."""
    from hoprag.glm.artifact import RETRIEVER_CONFIG, WEIGHTS, resolve_retriever_dir

    directory = resolve_retriever_dir(part).resolve()
    stamp = tuple(
        (name, (directory / name).stat().st_size, (directory / name).stat().st_mtime_ns)
        for name in (RETRIEVER_CONFIG, WEIGHTS)
    )
    return _fingerprint(str(directory), stamp)


@functools.lru_cache(maxsize=64)
def _fingerprint(directory: str, stamp: tuple[tuple[str, int, int], ...]) -> str:
    from hoprag.glm.artifact import RETRIEVER_CONFIG, WEIGHTS
    from hoprag.kg.store import sampled_sha256

    digest = hashlib.sha256()
    digest.update((Path(directory) / RETRIEVER_CONFIG).read_bytes())
    digest.update(sampled_sha256(Path(directory) / WEIGHTS).encode())
    return digest.hexdigest()[:12]
