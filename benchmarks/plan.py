"""``hoprag bench plan``: what a question costs the planner, paper-like calls vs hoprag's, in one run.

Both configurations answer the same questions with the same LLM backend (one loaded model):

* ``paper-like``: every PAI-2 sub-task its own call, no batching, no cache;
* ``hoprag``: merged prompts, dictionary entity matches, literal clue queries, updates only when
  a placeholder waits, batching and the (prompt, model) cache;
* ``hoprag, repeated``: the same questions asked again (the cache answers).

Reported per configuration: mean LLM calls, prompt and completion tokens, latency per question,
exact match (HotpotQA normalization) and how often the answer was NotEnoughInfo.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.harness import publish
from evaluation.metrics import exact_match


def _summary(name: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "config": name,
        "questions": len(rows),
        "llm_calls": round(statistics.fmean(r["llm_calls"] for r in rows), 2),
        "max_llm_calls": max(r["llm_calls"] for r in rows),
        "prompt_tokens": round(statistics.fmean(r["prompt_tokens"] for r in rows), 1),
        "completion_tokens": round(statistics.fmean(r["completion_tokens"] for r in rows), 1),
        "latency_s": round(statistics.fmean(r["seconds"] for r in rows), 2),
        "exact_match": round(statistics.fmean(r["em"] for r in rows), 3),
        "not_enough_info": round(statistics.fmean(r["nei"] for r in rows), 3),
        "steps": round(statistics.fmean(r["steps"] for r in rows), 2),
    }


def run_plan_benchmark(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from hoprag.config import load_config
    from hoprag.llm.factory import build_llm
    from hoprag.qa.builder import assemble_qa_system, load_components
    from hoprag.qa.config import QASettings

    config = load_config(QASettings, args.config, args.overrides)
    components = load_components(args.index, config, llm=build_llm(config.llm))
    index = components.kg.index
    if index.questions is None:
        raise SystemExit(f"hoprag: {args.index} has no processed questions to benchmark with")
    questions = [q for q in index.questions.to_pylist() if q["split"] == args.split][: args.questions]
    if not questions:
        raise SystemExit(f"hoprag: no {args.split!r} questions in {args.index}")
    _ = components.kg.triple_vectors  # computed once, outside the timed questions
    ours_config = config.planner.model_copy(update={"max_steps": args.max_steps})
    planners = {
        name: assemble_qa_system(components, config.model_copy(update={"planner": planner_config}), "plan")
        for name, planner_config in (("paper-like", ours_config.with_paper_calls()), ("hoprag", ours_config))
    }
    results: dict[str, list[dict[str, Any]]] = {}
    started = time.perf_counter()
    for name, planner in [*planners.items(), ("hoprag, repeated", planners["hoprag"])]:
        rows = []
        for q in tqdm(questions, desc=name, unit="q"):
            a = planner.answer(q["question"])
            rows.append(
                {
                    "id": q["id"],
                    "llm_calls": a.llm_calls,
                    "prompt_tokens": a.prompt_tokens,
                    "completion_tokens": a.completion_tokens,
                    "seconds": a.seconds,
                    "em": exact_match(a.answer, [q["answer"], *q.get("answer_aliases", [])]),
                    "nei": float(a.not_enough_info),
                    "steps": len(a.steps),
                    "answer": a.answer,
                    "calls_by_purpose": a.calls_by_purpose,
                }
            )
        results[name] = rows
    report = {
        "index": str(args.index),
        "llm": components.llm.model_id,
        "max_steps": args.max_steps,
        "question_count": len(questions),
        "rows_file": str(args.workdir / "plan-rows.json"),
        "wall_s": round(time.perf_counter() - started, 1),
        "summary": [_summary(name, rows) for name, rows in results.items()],
    }
    args.workdir.mkdir(parents=True, exist_ok=True)
    (args.workdir / "plan-rows.json").write_text(json.dumps({**report, "questions": results}, indent=1))
    publish("plan", report, args, table=_table)
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--index", type=Path, default=Path("runs/demo/index"), help="index with processed questions"
    )
    p.add_argument("--questions", type=int, default=10, help="questions per configuration")
    p.add_argument("--split", default="test")
    p.add_argument("--max-steps", type=int, default=8)
    p.add_argument("--workdir", type=Path, default=Path("runs/bench-plan"))
    p.add_argument("--json", action="store_true")


def _table(report: dict[str, Any]) -> Iterator[str]:
    """The human-readable lines of ``hoprag bench plan``'s report."""
    yield (f"LLM {report['llm']}; {report['question_count']} questions; max_steps {report['max_steps']}")
    yield ("config              calls (max)   prompt tok  compl tok  latency s  EM     NEI    steps")
    for s in report["summary"]:
        yield (
            f"{s['config']:<18} {s['llm_calls']:>6} ({s['max_llm_calls']:>3}) {s['prompt_tokens']:>11} "
            f"{s['completion_tokens']:>10} {s['latency_s']:>10} {s['exact_match']:>6} {s['not_enough_info']:>6} {s['steps']:>6}"
        )
    yield (f"per-question rows: {report['rows_file']}")
