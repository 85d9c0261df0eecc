"""``hoprag bench llm``: the CPU engines and model tiers side by side, in one run.

For each system (``ENGINE:MODEL``; ``embedded:gemma-3-270m`` is the baseline: today's transformers
path on the packaged GGUF, de-quantized), taking turns on the same prompts:

- **prompt kinds**: seconds per call, prefill and decode tokens/s, one prompt at a time, for the
  three prompts a question or document costs most often: OpenIE on a real 2Wiki paragraph, a plan
  step, and an answer from gold paragraphs. Prefill is timed with a one-token answer; decode is the
  rest of a full answer's time over its further tokens.
- **batched OpenIE**: paragraphs per minute with the engine's own batch (the indexing path).
- **reading** (``--reading N``): exact match / F1 of hoprag's own answer prompt on the first N test
  questions of each real sample (HotpotQA, 2Wiki, MuSiQue) shown only their gold paragraphs (the
  reading ceiling of a tier, per dataset: no one dataset decides a prompt).
- **contention** (``--contention``): decode tokens/s of a llama.cpp 270M in a fresh process while a
  second process burns one core, with all cores and OpenMP's active waiting (the old default) and
  with :func:`hoprag.threads.runner_threads`' share and passive waiting (hoprag/threads.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.harness import peak_rss_mib, publish

REAL = Path(__file__).parent / "data" / "real"
HOTPOT = REAL / "hotpotqa" / "dev-distractor-sample.json"
READING_SETS = {
    "hotpotqa": HOTPOT,
    "2wiki": REAL / "2wikimultihopqa" / "dev-context-sample.json",
    "musique": REAL / "musique" / "dev-sample.jsonl",
}
WIKI_CORPUS = REAL / "2wikimultihopqa" / "2wikimultihopqa_corpus.json"
DEFAULT_SYSTEMS = ("embedded:gemma-3-270m", "llamacpp:gemma-3-270m", "llamacpp:qwen2.5-coder-1.5b")


def build_system(spec: str, batch: int) -> Any:
    """``ENGINE:MODEL`` → a loaded LLM (``embedded:gemma-3-270m`` is the base model without the
    student adapter, so both engines run the same weights)."""
    from hoprag.llm.factory import LLMBackendConfig, build_llm

    engine, _, model = spec.partition(":")
    if engine == "embedded":
        if model not in ("", "gemma-3-270m"):
            raise ValueError(f"the embedded engine runs gemma-3-270m only, not {model!r}")
        section = {"adapter": None, "max_batch_size": batch}
    elif engine == "llamacpp":
        section = {"model": model, "max_batch_size": batch, "context_tokens": 3072, "adapter": None}
    else:
        raise ValueError(f"unknown engine {engine!r} in {spec!r}: embedded or llamacpp")
    return build_llm(LLMBackendConfig.model_validate({"backend": engine, engine: section}))


def sample_prompts(llm: Any) -> dict[str, Any]:
    """The three prompt kinds in the form ``llm`` takes, from real data."""
    from hoprag.extraction.prompts import openie_prompt
    from hoprag.planner.prompts import answer_prompt, plan_prompt

    paragraph = wiki_paragraphs(1)[0]
    question, gold, _ = gold_reading(HOTPOT, 1)[0]
    return {
        "openie": openie_prompt(paragraph, llm.prompt_style),
        "plan": plan_prompt(question, llm.prompt_style),
        "answer": answer_prompt(question, [], llm.prompt_style, documents=gold),
    }


def wiki_paragraphs(count: int) -> list[str]:
    rows = json.loads(WIKI_CORPUS.read_text(encoding="utf-8"))
    return [f"{row['title']}: {row['text']}" for row in rows[:count]]


def gold_reading(path: Path, count: int) -> list[tuple[str, list[str], list[str]]]:
    """(question, gold paragraphs, answers) of the first ``count`` test questions of a real sample
    (questions split 0.5 by id, as the real-data recipes split them); a MuSiQue title that names
    several paragraphs gives the first."""
    from indexing.formats.reader import read_published

    corpus = read_published(path, train_fraction=0.5)
    texts: dict[str, str] = {}
    for document in corpus.documents:
        texts.setdefault(document.title, document.text)
    out = []
    for q in corpus.questions["test"][:count]:
        titles = dict.fromkeys(q.get("supporting_facts", []))
        gold = [f"{t}: {texts[t]}" for t in titles if t in texts]
        out.append((q["question"], gold, [q["answer"], *q.get("answer_aliases", [])]))
    return out


def measure_kinds(systems: dict[str, Any], repeat: int) -> list[dict[str, Any]]:
    """Per system and prompt kind: seconds per call, prefill and decode tokens/s (turns taken)."""
    from dataclasses import replace

    prompts = {name: sample_prompts(llm) for name, llm in systems.items()}
    samples: dict[tuple[str, str], list[tuple[float, float, int, int]]] = {}
    for _ in range(repeat + 1):  # the first round warms caches and is dropped
        for kind in ("openie", "plan", "answer"):
            for name, llm in systems.items():
                spec = prompts[name][kind]
                one = replace(spec.params, max_new_tokens=1, stop=())
                started = time.perf_counter()
                first = llm.generate([spec.prompt], one)[0]
                prefill_s = time.perf_counter() - started
                started = time.perf_counter()
                full = llm.generate([spec.prompt], spec.params)[0]
                call_s = time.perf_counter() - started
                samples.setdefault((name, kind), []).append(
                    (prefill_s, call_s, first.prompt_tokens, full.completion_tokens)
                )
    rows = []
    for (name, kind), runs in samples.items():
        runs = runs[1:]
        prefill = statistics.median(r[0] for r in runs)
        call = statistics.median(r[1] for r in runs)
        tokens_in = runs[0][2]
        tokens_out = statistics.median(r[3] for r in runs)
        rows.append(
            {
                "system": name,
                "kind": kind,
                "seconds_per_call": round(call, 3),
                "prompt_tokens": tokens_in,
                "completion_tokens": tokens_out,
                "prefill_tok_s": round(tokens_in / prefill, 1) if prefill else None,
                "decode_tok_s": round((tokens_out - 1) / (call - prefill), 1)
                if tokens_out > 1 and call > prefill
                else None,
            }
        )
    return rows


def measure_batched_openie(systems: dict[str, Any], paragraphs: int, batch: int) -> list[dict[str, Any]]:
    """Paragraphs per minute of batched OpenIE (the indexing path: batches of ``batch`` paragraphs as
    an indexing actor receives them), systems one after the other, with the rate of the first and
    the last tenth of the paragraphs (a run that slows down shows here)."""
    from hoprag.extraction.prompts import openie_prompt

    texts = wiki_paragraphs(paragraphs)
    rows = []
    for name, llm in systems.items():
        specs = [openie_prompt(t, llm.prompt_style) for t in texts]
        done: list[tuple[int, float]] = []  # (paragraphs, seconds) per batch
        tokens = errors = 0
        for start in range(0, len(specs), batch):
            chunk = specs[start : start + batch]
            began = time.perf_counter()
            outputs = llm.generate([s.prompt for s in chunk], chunk[0].params)
            done.append((len(chunk), time.perf_counter() - began))
            tokens += sum(o.completion_tokens for o in outputs)
            errors += sum(not o.ok for o in outputs)
        seconds = sum(s for _, s in done)
        tenth = max(1, len(done) // 10)
        rows.append(
            {
                "system": name,
                "paragraphs": len(texts),
                "paragraphs_per_min": round(60 * len(texts) / seconds, 1),
                "first_tenth_per_min": round(
                    60 * sum(n for n, _ in done[:tenth]) / sum(s for _, s in done[:tenth]), 1
                ),
                "last_tenth_per_min": round(
                    60 * sum(n for n, _ in done[-tenth:]) / sum(s for _, s in done[-tenth:]), 1
                ),
                "completion_tok_s": round(tokens / seconds, 1),
                "errors": errors,
                "process_peak_rss_mb": peak_rss_mib(),  # the whole process so far (every system loaded)
            }
        )
    return rows


def measure_reading(systems: dict[str, Any], count: int) -> list[dict[str, Any]]:
    """EM / F1 of hoprag's answer prompt on gold paragraphs only, per system and real sample."""
    from evaluation.metrics import exact_match, f1_score
    from hoprag.planner.prompts import answer_prompt
    from hoprag.qa.retrieve import answer_from_completion

    rows = []
    for dataset, path in READING_SETS.items():
        items = gold_reading(path, count)
        for name, llm in systems.items():
            specs = [answer_prompt(q, [], llm.prompt_style, documents=gold) for q, gold, _ in items]
            started = time.perf_counter()
            outputs = llm.generate([s.prompt for s in specs], specs[0].params)
            seconds = time.perf_counter() - started
            answers = [
                answer_from_completion(q, s.prompt, o)[0]
                for (q, _, _), s, o in zip(items, specs, outputs, strict=True)
            ]
            golds = [gold for _, _, gold in items]
            rows.append(
                {
                    "dataset": dataset,
                    "system": name,
                    "questions": len(items),
                    "em": round(statistics.mean(map(exact_match, answers, golds)), 3),
                    "f1": round(statistics.mean(map(f1_score, answers, golds)), 3),
                    "seconds_per_question": round(seconds / max(1, len(items)), 2),
                }
            )
    return rows


_PROBE = """
import json, sys, time
from hoprag.llm.llamacpp import LlamaCppLLM
from hoprag.llm.llamacpp_config import LlamaCppConfig
from hoprag.llm.base import GenerationParams
llm = LlamaCppLLM(LlamaCppConfig(model="gemma-3-270m", max_batch_size=1, context_tokens=512,
                                 n_threads=int(sys.argv[1]) or None))
params = GenerationParams(max_new_tokens=96)
llm.generate(["Once upon a time"], params)
started = time.perf_counter()
out = llm.generate(["Write about dragons and knights:"], params)[0]
print(json.dumps({"threads": llm.threads, "decode_tok_s": out.completion_tokens / (time.perf_counter() - started)}))
"""


def measure_contention() -> list[dict[str, Any]]:
    """Decode tok/s of a 270M in a fresh process beside a process burning one core: all cores with
    active OpenMP waiting, all cores waiting passively, and one thread (the share a 2-core machine
    gives a runner beside one busy process)."""
    cores = os.cpu_count() or 1
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    rows = []
    try:
        for label, policy, threads in (
            ("all cores, active wait", "ACTIVE", cores),
            ("all cores, passive wait", "PASSIVE", cores),
            ("one core fewer, passive wait", "PASSIVE", max(1, cores - 1)),
        ):
            env = {**os.environ, "OMP_WAIT_POLICY": policy}
            done = subprocess.run(
                [sys.executable, "-c", _PROBE, str(threads)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            result = json.loads(done.stdout.strip().splitlines()[-1])
            rows.append({"setting": label, "omp_wait_policy": policy, **result})
    finally:
        burner.kill()
        burner.wait()
    return rows


def _table(report: dict[str, Any]) -> Iterable[str]:
    yield "per prompt kind (one prompt at a time; medians):"
    for r in report["kinds"]:
        yield (
            f"  {r['system']:<30} {r['kind']:<7} {r['seconds_per_call']:>7.2f} s/call  prefill "
            f"{r['prefill_tok_s'] or 0:>7.1f} tok/s  decode {r['decode_tok_s'] or 0:>6.1f} tok/s  "
            f"({r['prompt_tokens']} in, {r['completion_tokens']} out)"
        )
    for key, title in (
        ("batched_openie", "batched OpenIE"),
        ("reading", "reading"),
        ("contention", "contention"),
    ):
        if report.get(key):
            yield f"{title}:"
            for r in report[key]:
                yield "  " + ", ".join(f"{k} {v}" for k, v in r.items())


def run_llm_benchmark(args: argparse.Namespace) -> int:
    """Entry point of ``hoprag bench llm``."""
    systems = {spec: build_system(spec, args.batch) for spec in args.systems}
    results: dict[str, Any] = {"systems": list(systems), "batch": args.batch}
    results["load_seconds"] = {
        name: round(getattr(llm, "load_seconds", 0.0), 2) for name, llm in systems.items()
    }
    results["kinds"] = measure_kinds(systems, args.repeat)
    if args.paragraphs:
        results["batched_openie"] = measure_batched_openie(systems, args.paragraphs, args.batch)
    if args.reading:
        results["reading"] = measure_reading(systems, args.reading)
    if args.contention:
        results["contention"] = measure_contention()
    publish("llm", results, args, _table)
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--systems",
        nargs="+",
        default=list(DEFAULT_SYSTEMS),
        help="ENGINE:MODEL, the first is the baseline (default: %(default)s)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds per prompt kind")
    parser.add_argument("--batch", type=int, default=16, help="rows decoded together (batched OpenIE)")
    parser.add_argument(
        "--paragraphs", type=int, default=32, help="2Wiki paragraphs for batched OpenIE (0: skip)"
    )
    parser.add_argument(
        "--reading", type=int, default=0, help="test questions per real sample for reading EM/F1"
    )
    parser.add_argument("--contention", action="store_true", help="decode beside a process burning a core")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--workdir", type=Path, default=None)
