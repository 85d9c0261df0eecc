"""``hoprag bench serve``: QPS and latency of the QA route under a bounded closed-loop load.

Configurations, one after another in the same run (the app is redeployed for each):

* ``batch, 1 replica``   — Retriever with ``@serve.batch``, one replica;
* ``no batch, 1 replica`` — every retrieval its own forward;
* ``batch, 2 replicas``;
* ``autoscale 1→2``      — Retriever autoscaling (target 0.5 ongoing requests per replica: on 2
  cores the QA path, not the Retriever, is the bottleneck, so a higher target is never reached);
  the replica count is sampled every second while the load runs.

Mode ``retrieve``. Each configuration first asks every question once (warm-up); the load then
repeats them, so the QA replica's LLM cache answers the single LLM call and the figures measure
retrieval plus serving, not the 270M model's generation speed.

``--stream`` measures streamed answers instead (one app with the configured LLM, by default the
embedded Gemma): each question once per mode, one at a time, uncached, over ``"stream": true``;
per request the time to the first event, to the first pipeline stage, to the first answer token
and to the final ``answer`` event.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from benchmarks.harness import publish
from serving.load import closed_loop, cycled_questions, load_test_settings, percentile, warm_up


def _replicas(app: str, deployment: str) -> int:
    from ray import serve

    status = serve.status().applications[app].deployments[deployment]
    return int(status.replica_states.get("RUNNING", 0))


def _sample_replicas(timeline: list[tuple[float, int]], stop: threading.Event) -> None:
    """Append (seconds, running Retriever replicas) once a second until ``stop`` is set."""
    t0 = time.perf_counter()
    while not stop.is_set():
        timeline.append((round(time.perf_counter() - t0, 1), _replicas("hoprag", "Retriever-default")))
        stop.wait(1.0)


def _stream_once(client: httpx.Client, base: str, question: str, mode: str) -> dict[str, Any]:
    """One streamed answer: milliseconds from sending the request to each kind of event."""
    started = time.perf_counter()
    marks: dict[str, float] = {}
    tokens = 0
    event = ""
    body = {"question": question, "mode": mode, "stream": True}
    with client.stream("POST", f"{base}/v1/qa", json=body) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
                continue
            if not line.startswith("data:"):
                continue
            now = round(1000 * (time.perf_counter() - started), 1)
            marks.setdefault("first_event_ms", now)
            if event == "stage" and '"started"' not in line:
                marks.setdefault("first_stage_ms", now)
            if event == "token":
                tokens += 1
                marks.setdefault("first_token_ms", now)
            if event in ("answer", "error"):
                marks["total_ms"] = now
                marks["outcome"] = event  # type: ignore[assignment]
    return {"mode": mode, "question": question, "tokens": tokens, **marks}


def run_stream_benchmark(args: argparse.Namespace) -> int:
    """``hoprag bench serve --stream``: first-event and first-token latency of streamed answers."""
    from ray import serve

    from hoprag.kg.index import KGIndex
    from serving.run import start_app, wait_until_ready
    from serving.settings import QAAppSettings

    questions = cycled_questions(KGIndex(args.index), args.questions)
    one = {"num_cpus": 0.1, "autoscaling": {"min_replicas": 1, "max_replicas": 1}}
    settings = QAAppSettings.model_validate(
        {
            "index": str(args.index),
            "retriever": args.retriever,
            "request_timeout_s": 600,
            **{name: dict(one) for name in ("ingress", "qa", "retriever_deployment", "llm_deployment")},
        }
    )
    print("[bench serve --stream] deploying", flush=True)
    base = start_app(settings, port=args.port)
    wait_until_ready(base, progress=False)
    results = []
    with httpx.Client(timeout=600) as client:
        for mode in args.modes.split(","):
            for q in questions:
                row = _stream_once(client, base, q, mode)
                results.append(row)
                print(f"  {json.dumps(row)}", flush=True)
    serve.shutdown()
    summary = {}
    for mode in args.modes.split(","):
        mine = [r for r in results if r["mode"] == mode]
        summary[mode] = {
            key: {
                "p50": percentile([r[key] for r in mine if key in r], 0.5),
                "max": max((r[key] for r in mine if key in r), default=float("nan")),
                "n": sum(key in r for r in mine),
            }
            for key in ("first_event_ms", "first_stage_ms", "first_token_ms", "total_ms")
        }
    report = {
        "index": str(args.index),
        "retriever": args.retriever,
        "llm": settings.llm.backend,
        "summary": summary,
        "results": results,
    }
    publish("serve-stream", report, args, table=_stream_table)
    return 0


def _stream_table(report: dict[str, Any]) -> Iterator[str]:
    """The human-readable lines of ``hoprag bench serve --stream``'s report."""
    yield f"retriever {report['retriever']}; LLM {report['llm']}; one request at a time"
    yield "mode       measure           p50 ms     max ms   n"
    for mode, measures in report["summary"].items():
        for key, v in measures.items():
            yield f"{mode:<10} {key:<16} {v['p50']:>8.1f} {v['max']:>10.1f}   {v['n']}"


def run_serve_benchmark(args: argparse.Namespace) -> int:
    if args.stream:
        return run_stream_benchmark(args)
    if args.kg_triples:  # the synthetic-KG scale benchmark (benchmarks/serve_scale.py)
        from benchmarks.serve_scale import run_scale_benchmark

        return run_scale_benchmark(args)
    from ray import serve

    from hoprag.kg.index import KGIndex
    from serving.run import start_app, wait_until_ready

    questions = cycled_questions(KGIndex(args.index), args.questions)
    fixed = {"min_replicas": 1, "max_replicas": 1}
    all_configs = [
        ("batch, 1 replica", True, fixed),
        ("no batch, 1 replica", False, fixed),
        ("batch, 2 replicas", True, {"min_replicas": 2, "max_replicas": 2}),
        (
            "autoscale 1->2",
            True,
            {
                "min_replicas": 1,
                "max_replicas": 2,
                "target_ongoing_requests": 0.5,
                "upscale_delay_s": 1,
                "downscale_delay_s": 600,
            },
        ),
    ]
    keys = ["batch1", "nobatch", "batch2", "autoscale"]
    wanted = set(args.configs.split(",")) if args.configs else set(keys)
    configs = [c for k, c in zip(keys, all_configs, strict=True) if k in wanted]
    results = []
    for name, batching, autoscaling in configs:
        settings = load_test_settings(
            args.index, args.retriever, batching=batching, retriever_autoscaling=autoscaling
        )
        print(f"[bench serve] {name}: deploying", flush=True)
        base = start_app(settings, port=args.port)
        wait_until_ready(base, progress=False)
        # Replica count from deployment on: warm-up traffic already counts for autoscaling.
        timeline: list[tuple[float, int]] = []
        sampling = threading.Event()
        sampler = threading.Thread(target=_sample_replicas, args=(timeline, sampling))
        sampler.start()
        warmup_started = time.perf_counter()
        warm_up(base, questions, top_k=5, timeout_s=300)
        load_starts_at = round(time.perf_counter() - warmup_started, 1)
        load = closed_loop(base, questions, args.concurrency, args.seconds, top_k=5)
        sampling.set()
        sampler.join()
        row = {"config": name, "concurrency": args.concurrency, **load}
        if name.startswith("autoscale"):
            row["replicas_over_time"] = timeline
            row["load_starts_at_s"] = load_starts_at
        results.append(row)
        print(f"  {json.dumps(row)}", flush=True)
        serve.delete("hoprag")
    serve.shutdown()
    report = {
        "index": str(args.index),
        "retriever": args.retriever,
        "concurrency": args.concurrency,
        "seconds_per_config": args.seconds,
        "results": results,
    }
    publish("serve", report, args, table=_load_table)
    return 0


def _load_table(report: dict[str, Any]) -> Iterator[str]:
    """The human-readable lines of ``hoprag bench serve``'s report."""
    yield (
        f"retriever {report['retriever']}; {report['concurrency']} concurrent clients, "
        f"{report['seconds_per_config']:g} s per configuration"
    )
    yield "config                 QPS     p50 ms   p95 ms   p99 ms   errors"
    for r in report["results"]:
        yield (
            f"{r['config']:<20} {r['qps']:>6} {r['p50_ms']:>9} {r['p95_ms']:>8} {r['p99_ms']:>8}   {r['errors'] or '-'}"
        )
    for auto in (r for r in report["results"] if "replicas_over_time" in r):
        yield (
            f"autoscaling (s since warm-up began, Retriever replicas; load from {auto['load_starts_at_s']} s): "
            + " ".join(f"{t}:{n}" for t, n in auto["replicas_over_time"])
        )


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--index", type=Path, default=Path("runs/demo/index"))
    p.add_argument("--retriever", default="runs/demo/glm", help="retriever directory or 'dense'")
    p.add_argument("--questions", type=int, default=20, help="distinct questions cycled by the load")
    p.add_argument("--concurrency", type=int, default=8, help="closed-loop clients")
    p.add_argument("--seconds", type=float, default=20.0, help="load duration per configuration")
    p.add_argument("--port", type=int, default=8011)
    p.add_argument("--workdir", type=Path, default=Path("runs/bench-serve"))
    p.add_argument(
        "--configs",
        default=None,
        help="comma-separated subset of batch1,nobatch,batch2,autoscale (default: all)",
    )
    p.add_argument(
        "--kg-triples",
        type=int,
        nargs="*",
        default=None,
        help="instead: serve synthetic KGs of these many triples, before/after issue 17's vector search "
        "(benchmarks/serve_scale.py), e.g. --kg-triples 10000 1000000",
    )
    p.add_argument("--variants", default="before,after", help="with --kg-triples: before, after or both")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--stream",
        action="store_true",
        help="measure streamed answers (first event, first stage, first answer token) instead of load",
    )
    p.add_argument("--modes", default="retrieve,plan", help="with --stream: the modes to measure")
