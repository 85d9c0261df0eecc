"""``hoprag bench steps``: an LLM's plans and plan updates against a benchmark's gold search plans.

For each test question with a gold plan (``hoprag generate`` writes one, ``hoprag.planner.gold``),
each system gets the planner's plan prompt and, along the gold plan, every update prompt a planner
whose steps found their gold answers would send (the planner's own prompt builders: the student
prompts for a student trained on the task, the few-shot ones otherwise). Scored per system:

* ``plan_exact``: the parsed steps equal the gold steps (case and punctuation aside);
* ``steps_right``: as many steps as the gold plan; ``placeholders_right``: the same steps wait on an
  earlier answer (name a ``[placeholder]``);
* ``chain_right``: as many steps as the gold plan, whose ``[placeholder]`` texts, in order, are the
  gold plan's: the plan chains through the same intermediate answers, in whatever words its
  sub-questions are put (the generator words each gold step with a random template, so
  ``plan_exact`` is near 0 for any model that did not see that draw; the placeholders are the
  question's own phrases);
* ``update_right``: the parsed update equals the right one (the same final answer, or the same
  rewritten remaining steps).

Broken down by hops (2 vs 3-4) and by whether the question's domain is held out of the benchmark's
training side. Wording other than the gold's counts as wrong here even when a planner could use it:
these are agreement rates with one correct plan, a floor for plan quality.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

from benchmarks.harness import publish
from hoprag.config import StrictModel
from hoprag.llm.factory import LLMBackendConfig


class BenchInputError(ValueError):
    """A benchmark directory or question file this bench cannot use (the user's to fix)."""


class StepsBenchConfig(StrictModel):
    """Systems to compare (``--config FILE``, ``--set systems.NAME.KEY=VALUE``)."""

    systems: dict[str, LLMBackendConfig] = Field(
        default_factory=lambda: {
            "student": LLMBackendConfig(),
            "base": LLMBackendConfig.model_validate({"embedded": {"adapter": None}}),
        },
        description="LLM backend config per system name. Defaults: 'student' (the embedded default) and "
        "'base' (the same model without an adapter, few-shot prompts). --llm-config NAME=FILE or "
        "--set systems.NAME.KEY=VALUE adds one (e.g. a student distilled with the plan and update tasks).",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--benchmark",
        type=Path,
        required=True,
        help="a `hoprag generate` output directory, or a published benchmark file whose questions state "
        "their chain (MuSiQue, 2WikiMultihopQA: indexing/formats/plans.py)",
    )
    parser.add_argument(
        "--split",
        default="test",
        help="question file raw/SPLIT.json, or the split of a published file (default: test)",
    )
    parser.add_argument(
        "--format",
        default="auto",
        help="a published file's format, as `hoprag index --format` (default: auto)",
    )
    parser.add_argument(
        "--train-fraction",
        type=float,
        default=0.5,
        help="a published file's train/test split by question id, as `hoprag index --train-fraction` "
        "(default: 0.5, the split distillation and evaluation use)",
    )
    parser.add_argument("--questions", type=int, default=60, help="the first N questions with a gold plan")
    parser.add_argument(
        "--llm-config",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="add system NAME from a YAML LLM backend config (or a file with an 'llm' section); repeatable",
    )
    parser.add_argument("--workdir", type=Path, default=Path("runs/bench-steps"), help="per-question rows")
    parser.add_argument("--json", action="store_true", help="one line of JSON")


def _norm(text: str) -> str:
    return re.sub(r"\W+", " ", text.lower()).strip()


def _placeholders(steps: Sequence[str]) -> list[str]:
    """The ``[placeholder]`` texts of ``steps`` in order, normalized."""
    from hoprag.planner.prompts import PLACEHOLDER

    return [_norm(m) for step in steps for m in PLACEHOLDER.findall(step)]


def load_questions(
    benchmark: Path, split: str, limit: int, fmt: str = "auto", train_fraction: float = 0.5
) -> tuple[list[dict[str, Any]], set[str]]:
    """The first ``limit`` questions of ``split`` that have a usable gold plan, and the benchmark's
    held-out domains (none when its world.json does not say). A published benchmark file (not a
    ``hoprag generate`` directory): :func:`load_published_questions`."""
    from hoprag.planner.gold import gold_plan

    if benchmark.is_file():
        return load_published_questions(benchmark, split, limit, fmt, train_fraction), set()
    raw = benchmark / "raw" if (benchmark / "raw").is_dir() else benchmark
    path = raw / f"{split}.json"
    if not path.is_file():
        raise BenchInputError(f"{path}: no such question file (is {benchmark} a `hoprag generate` output?)")
    rows = json.loads(path.read_text(encoding="utf-8"))
    questions = [q for q in rows if isinstance(q, dict) and gold_plan(q) is not None][:limit]
    if not questions:
        raise BenchInputError(
            f"{path}: no question has a gold plan (regenerate it with this `hoprag generate`)"
        )
    world = raw / "world.json"
    config = json.loads(world.read_text(encoding="utf-8")).get("config", {}) if world.is_file() else {}
    return questions, set(config.get("held_out_domains") or [])


def load_published_questions(
    path: Path, split: str, limit: int, fmt: str, train_fraction: float
) -> list[dict[str, Any]]:
    """The first ``limit`` questions of a published benchmark file's ``split`` (split by id hash as
    ``hoprag index --train-fraction`` splits), each with the plan its stated chain gives
    (:func:`indexing.formats.plans.published_plan`); those without one are left out."""
    from hoprag.planner.gold import gold_plan
    from indexing.formats import read_published
    from indexing.formats.plans import published_plan

    corpus = read_published(path, fmt, train_fraction)  # type: ignore[arg-type]
    rows = corpus.questions.get(split)
    if rows is None:
        raise BenchInputError(f"{path}: no {split!r} split (splits: {sorted(corpus.questions)})")
    questions = []
    for q in rows:
        plan = published_plan(q)
        if plan is not None and gold_plan({"plan": plan}) is not None:
            questions.append({**q, "plan": plan, "hops": (q.get("metadata") or {}).get("hops", len(plan))})
    if not questions:
        raise BenchInputError(
            f"{path}: no {split} question states its chain (MuSiQue decompositions and 2Wiki evidences do; "
            "HotpotQA does not)"
        )
    return questions[:limit]


def score_system(
    llm: Any, questions: Sequence[dict[str, Any]], held_out_domains: set[str], label: str = "questions"
) -> dict[str, Any]:
    """Plan and update agreement of ``llm`` with the questions' gold plans (module docstring);
    progress named ``label`` on stderr (a bar on a terminal, lines in a log)."""
    from hoprag.llm.base import TASK_PLAN, TASK_UPDATE, uses_student_prompt
    from hoprag.logs import progress
    from hoprag.planner.gold import gold_plan, update_states
    from hoprag.planner.parsing import parse_steps, parse_update
    from hoprag.planner.prompts import PLACEHOLDER, plan_prompt, update_prompt

    style = llm.prompt_style
    plan_student = uses_student_prompt(llm, TASK_PLAN)
    update_student = uses_student_prompt(llm, TASK_UPDATE)
    rows = []
    started = time.perf_counter()
    bar = progress(len(questions), label, "q")
    for q in questions:
        plan = gold_plan(q)
        assert plan is not None  # load_questions keeps only those
        spec = plan_prompt(q["question"], style, student=plan_student)
        output = llm.generate([spec.prompt], spec.params)[0].text
        steps = parse_steps(output).value or []
        gold = [s.step for s in plan]
        updates_right = 0
        states = update_states(plan, str(q.get("answer", "")))
        for state in states:
            spec = update_prompt(q["question"], state.found, state.remaining, style, student=update_student)
            got = parse_update(llm.generate([spec.prompt], spec.params)[0].text).value
            if got is None:
                continue
            if state.final_answer is not None:
                updates_right += got.final_answer is not None and _norm(got.final_answer) == _norm(
                    state.final_answer
                )
            else:
                updates_right += [_norm(s) for s in got.remaining or []] == [
                    _norm(s) for s in state.rewritten
                ]
        rows.append(
            {
                "id": q.get("id"),
                "hops": q.get("hops"),
                "held_out_domain": q.get("domain") in held_out_domains,
                "plan_exact": [_norm(s) for s in steps] == [_norm(s) for s in gold],
                "steps_right": len(steps) == len(gold),
                "placeholders_right": [bool(PLACEHOLDER.search(s)) for s in steps]
                == [bool(PLACEHOLDER.search(s)) for s in gold],
                "chain_right": len(steps) == len(gold) and _placeholders(steps) == _placeholders(gold),
                "updates": len(states),
                "updates_right": updates_right,
                "plan_output": output,
            }
        )
        bar.update(1)
    bar.close()
    return {"seconds": round(time.perf_counter() - started, 1), "summary": summarize(rows), "rows": rows}


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The agreement rates over ``rows``, overall and by hops and held-out domain: ``[rate, n]``."""

    def rates(chosen: Sequence[dict[str, Any]]) -> dict[str, Any]:
        if not chosen:
            return {"questions": 0}
        updates = sum(r["updates"] for r in chosen)
        return {
            "questions": len(chosen),
            "plan_exact": round(statistics.fmean(r["plan_exact"] for r in chosen), 3),
            "steps_right": round(statistics.fmean(r["steps_right"] for r in chosen), 3),
            "placeholders_right": round(statistics.fmean(r["placeholders_right"] for r in chosen), 3),
            "chain_right": round(statistics.fmean(r["chain_right"] for r in chosen), 3),
            "update_right": round(sum(r["updates_right"] for r in chosen) / updates, 3) if updates else None,
        }

    return {
        "all": rates(rows),
        "2 hops": rates([r for r in rows if r["hops"] == 2]),
        "3-4 hops": rates([r for r in rows if (r["hops"] or 0) >= 3]),
        "held-out domain": rates([r for r in rows if r["held_out_domain"]]),
        "training domains": rates([r for r in rows if not r["held_out_domain"]]),
    }


def run_steps_benchmark(args: argparse.Namespace) -> int:
    from hoprag.config import load_config
    from hoprag.llm.factory import build_llm, read_llm_config_args

    base: dict[str, Any] = {}
    added = read_llm_config_args(args.llm_config)
    if added:  # beside the default systems
        base["systems"] = {**StepsBenchConfig().model_dump(mode="json")["systems"], **added}
    config = load_config(StepsBenchConfig, args.config, args.overrides, base=base or None)
    questions, held_out = load_questions(
        args.benchmark, args.split, args.questions, args.format, args.train_fraction
    )
    results: dict[str, Any] = {}
    for name, llm_config in config.systems.items():
        llm = build_llm(llm_config)
        results[name] = {"model": llm.model_id, **score_system(llm, questions, held_out, label=name)}
    args.workdir.mkdir(parents=True, exist_ok=True)
    (args.workdir / "steps-rows.json").write_text(json.dumps(results, indent=1))
    report = {
        "benchmark": str(args.benchmark),
        "questions": len(questions),
        "rows_file": str(args.workdir / "steps-rows.json"),
        "split": args.split,
        "systems": {
            n: {"model": r["model"], "seconds": r["seconds"], **r["summary"]} for n, r in results.items()
        },
    }
    publish("steps", report, args, table=_table)
    return 0


def _table(report: dict[str, Any]) -> Iterator[str]:
    """The human-readable lines of ``hoprag bench steps``'s report."""
    yield f"{report['questions']} {report['split']} questions of {report['benchmark']} with gold plans"
    yield "system | part | questions | plan exact | steps right | placeholders right | chain right | updates right"
    for name, r in report["systems"].items():
        split_by_domain = r["held-out domain"]["questions"] > 0  # else "training domains" is "all"
        for part in ("all", "2 hops", "3-4 hops", "training domains", "held-out domain"):
            s = r[part]
            if s["questions"] and (split_by_domain or part != "training domains"):
                yield (
                    f"{name} | {part} | {s['questions']} | {s['plan_exact']} | {s['steps_right']} | "
                    f"{s['placeholders_right']} | {s['chain_right']} | {s['update_right']}"
                )
        yield f"{name}: {r['model']}, {r['seconds']} s"
    yield f"per-question rows: {report['rows_file']}"
