"""``hoprag eval run``: benchmarks × systems as Ray Data jobs, resumable, then the report.

Per (benchmark, system) pair, the questions not yet in ``EVAL_DIR/results/<benchmark>/<system>.jsonl``
stream through an actor pool of :class:`~evaluation.worker.EvalWorker` (system loaded once per
actor); each finished result is appended and flushed at once, so an interrupted evaluation
resumes with only the missing questions. Stored results are reused only while the settings that
produced them still hold (:mod:`evaluation.provenance`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from evaluation.config import BenchmarkSpec, EvalConfig, SystemSpec
from evaluation.provenance import check_stored_results, verify_pair
from evaluation.questions import InputReport, load_questions
from evaluation.results import appending, read_results, results_path, reusable_results


def evaluate_pair(
    config: EvalConfig, bench: BenchmarkSpec, system: SystemSpec, rows: list[dict[str, Any]]
) -> dict[str, int]:
    """Compute the results of ``rows`` not yet stored for (``bench``, ``system``), on an actor pool;
    returns how many were computed and how many stored ones were reused. Stored results from
    other settings raise :class:`~evaluation.provenance.StaleResultsError`."""
    import ray.data

    from evaluation.worker import EvalWorker

    verify_pair(config, bench, system)
    path = results_path(config.out, bench.name, system.name)
    done = reusable_results(read_results(path), config, system)
    todo = [r for r in rows if r["id"] not in done]
    if not todo:
        return {"computed": 0, "reused": len(done)}
    by_id = {r["id"]: r for r in todo}
    ds = ray.data.from_items([{"row": json.dumps(r, default=str)} for r in todo])
    actors = config.qa_actors if system.kind == "qa" else config.retrieval_actors
    results = ds.map_batches(
        EvalWorker,
        fn_constructor_kwargs={
            "index_dir": str(bench.index),
            "system": system.model_dump(mode="json"),
            "qa": config.qa_settings(system).model_dump(mode="json"),
            "ks": list(config.ks),
            "judge": config.judge.model_dump(mode="json"),
        },
        batch_size=config.batch_size,
        concurrency=min(actors, max(1, len(todo) // config.batch_size + 1)),
        num_cpus=config.cpus_per_actor,
    )
    computed = 0
    with appending(path) as fh:
        for item in results.iter_rows():
            record = json.loads(item["result"])
            row = by_id[record["id"]]
            record.update(
                {
                    "question": row["question"],
                    "gold": row.get("answer", ""),
                    "supporting_docs": row["supporting_docs"],
                    "meta": row["meta"],
                }
            )
            fh.write(json.dumps(record) + "\n")
            fh.flush()
            computed += 1
    return {"computed": computed, "reused": len(done)}


def run_evaluation(config: EvalConfig, progress: bool = True, command: str | None = None) -> dict[str, Any]:
    """Evaluate every benchmark × system pair (resuming), then write summary.json, report.md, plots."""
    from evaluation.report import write_report
    from hoprag.ray_runtime import init_ray

    check_stored_results(config)  # before Ray starts: a changed system is refused at once
    init_ray(config.ray)
    started = time.perf_counter()
    inputs: dict[str, InputReport] = {}
    runs: list[dict[str, Any]] = []
    for bench in config.benchmarks:
        rows, report = load_questions(bench)
        inputs[bench.name] = report
        for system in config.systems:
            t0 = time.perf_counter()
            counts = evaluate_pair(config, bench, system, rows)
            runs.append(
                {
                    "benchmark": bench.name,
                    "system": system.name,
                    **counts,
                    "seconds": round(time.perf_counter() - t0, 1),
                }
            )
            if progress:
                print(
                    f"[eval] {bench.name} × {system.name}: {counts['computed']} computed, {counts['reused']} from earlier runs "
                    f"({time.perf_counter() - t0:.1f} s)",
                    flush=True,
                )
    meta = {
        "benchmarks": {
            b.name: {"index": str(b.index), "split": b.split, "input": inputs[b.name].__dict__}
            for b in config.benchmarks
        },
        "systems": [s.model_dump(mode="json") for s in config.systems],
        "runs": runs,
        "wall_s": round(time.perf_counter() - started, 1),
        "bootstrap": {"resamples": config.bootstrap_resamples, "seed": config.seed},
        "judge_prompts": config.judge.prompt_versions(),
        "command": command,
    }
    (Path(config.out) / "eval_config.json").write_text(config.model_dump_json(indent=1))
    return write_report(Path(config.out), meta)
