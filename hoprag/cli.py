"""The ``hoprag`` console script. Each subcommand parses its config, builds components, runs.

Heavy imports (torch, ray, transformers) happen inside the subcommand that needs them, so
``hoprag --help`` is instant.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hoprag import __version__

if TYPE_CHECKING:
    from evaluation.config import EvalConfig


def _add_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", type=Path, default=None, help="YAML config for this stage")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field, e.g. --set extraction.batch_size=8 (repeatable)",
    )


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hoprag",
        description="Multi-hop QA over knowledge graphs on Ray: indexing, training, serving, evaluation.",
    )
    parser.add_argument("--version", action="version", version=f"hoprag {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "index",
        help="build, resume, extend or shrink a KG index (`hoprag index stats DIR` prints statistics)",
        description="Corpus → LLM OpenIE (Ray Data) → KG index. Re-running resumes from the extraction "
        "cache; --add adds documents; --delete removes them.",
    )
    p.add_argument(
        "--corpus", type=Path, help="GFM-RAG raw dir (DIR/raw/dataset_corpus.json), .json, .jsonl or .parquet"
    )
    p.add_argument("--out", type=Path, required=True, help="index directory (created or updated)")
    p.add_argument("--add", action="store_true", help="add the corpus's documents to the existing index")
    p.add_argument(
        "--delete", action="append", default=[], metavar="TITLE", help="remove a document (repeatable)"
    )
    p.add_argument("--delete-file", type=Path, help="file with one document title per line to remove")
    p.add_argument("--json", action="store_true", help="print the build summary as one JSON object")
    _add_config_args(p)

    s = sub.add_parser(
        "index-stats", help="KG statistics of an index (also spelled `hoprag index stats DIR`)"
    )
    s.add_argument("index_dir", type=Path)
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.add_argument("--verify", action="store_true", help="also verify snapshot checksums")

    g = sub.add_parser("generate", help="write a synthetic multi-hop QA benchmark (GFM-RAG raw format)")
    g.add_argument("--out", type=Path, required=True, help="output directory (OUT/raw/*.json)")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--num-documents", type=int, default=1000)
    g.add_argument("--train-questions", type=int, default=200)
    g.add_argument("--test-questions", type=int, default=100)
    g.add_argument("--domains", nargs="+", default=None, help="domains to include (default: all)")
    g.add_argument(
        "--held-out-domains", nargs="+", default=[], help="domains whose questions go only to test"
    )

    d = sub.add_parser("demo", help="run the pipeline on the packaged sample corpus with embedded models")
    d.add_argument("--workdir", type=Path, default=Path("runs/demo"), help="where the demo writes its index")
    d.add_argument("--fresh", action="store_true", help="discard a previous demo index (and its cache) first")
    d.add_argument("--train-steps", type=int, default=150, help="GLM training steps (0 skips training)")
    d.add_argument("--no-serve", action="store_true", help="stop after training (skip serving and answering)")
    _add_config_args(d)

    t = sub.add_parser(
        "train", help="train the GLM retriever with Ray Train + DeepSpeed; exports RUN_DIR/retriever"
    )
    t.add_argument("--index", type=Path, required=True, help="index directory with processed questions")
    t.add_argument(
        "--out", type=Path, required=True, help="run directory (re-running the same command resumes)"
    )
    t.add_argument("--max-steps", type=int, default=None, help="stop after N optimizer steps (quick runs)")
    t.add_argument("--workers", type=int, default=None, help="Ray Train workers (overrides run.num_workers)")
    t.add_argument("--ray-address", default=None, help="existing Ray cluster (default: start a local one)")
    _add_config_args(t)

    ev = sub.add_parser("eval", help="batch evaluation: benchmarks × systems, metrics, reports")
    evsub = ev.add_subparsers(dest="eval", required=True)
    erun = evsub.add_parser(
        "run", help="evaluate benchmarks × systems (Ray Data, resumable) and write the report"
    )
    erun.add_argument("--index", action="append", default=[], help="index dir or registry name (repeatable)")
    erun.add_argument(
        "--retriever", default=None, help="GLM retriever / run directory (adds glm and glm-rag)"
    )
    erun.add_argument("--out", type=Path, default=None, help="evaluation directory")
    erun.add_argument("--limit", type=int, default=None, help="first N questions per benchmark")
    _add_config_args(erun)
    erep = evsub.add_parser("report", help="rebuild summary.json, report.md and plots from stored results")
    erep.add_argument("eval_dir", type=Path)
    er = evsub.add_parser("retrieval", help="document recall@2/@5 of a retriever on an index's questions")
    er.add_argument("--index", type=Path, required=True, help="index directory (with processed questions)")
    er.add_argument("--retriever", default="dense", help="'dense' or a retriever / training run directory")
    er.add_argument("--split", default="test", help="question split (train or test)")
    er.add_argument(
        "--by",
        default=None,
        metavar="FIELD",
        help="also report per value of a question field (domain, type, hops)",
    )
    er.add_argument("--json", action="store_true", help="print one JSON object")
    er.add_argument(
        "--out",
        type=Path,
        default=None,
        help="run it as `eval run` instead (Ray Data, resumable) and write summary.json and report.md here",
    )

    sv = sub.add_parser("serve", help="serve the QA app (Ray Serve) locally in the foreground")
    sv.add_argument("--index", required=True, help="index directory")
    sv.add_argument("--retriever", default="dense", help="GLM retriever / training run directory, or 'dense'")
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=int, default=8000)
    _add_config_args(sv)

    a = sub.add_parser("ask", help="answer a question (PAI-2 planner or single-shot GLM-RAG)")
    a.add_argument("question", help="the question (quote it)")
    a.add_argument("--index", type=Path, default=None, help="index directory (local answering)")
    a.add_argument("--url", default=None, help="base URL of a running `hoprag serve` (instead of --index)")
    a.add_argument("--token", default=None, help="bearer token for --url (default: $HOPRAG_TOKEN)")
    a.add_argument(
        "--retriever", default=None, help="GLM retriever / training run directory: adds the 'glm' traversal"
    )
    a.add_argument(
        "--mode",
        choices=["plan", "retrieve"],
        default="plan",
        help="plan: PAI-2 planner; retrieve: single-shot GLM-RAG (one retrieval, one LLM call; "
        "uses --retriever, else the dense baseline)",
    )
    a.add_argument("--top-k", type=int, default=5, help="documents returned (retrieve mode)")
    a.add_argument("--json", action="store_true", help="print one JSON object (answer, trace, cost)")
    _add_config_args(a)

    b = sub.add_parser("bench", help="benchmarks (results go to docs/benchmarks.md by hand)")
    bsub = b.add_subparsers(dest="bench", required=True)
    bi = bsub.add_parser("index", help="Ray Data extraction vs a sequential loop; graph build at scale")
    bi.add_argument("--docs", type=int, default=48, help="documents for the LLM throughput comparison")
    bi.add_argument("--sequential-docs", type=int, default=12, help="documents for the sequential baseline")
    bi.add_argument(
        "--graph-triples", type=int, default=1_000_000, help="synthetic triples for the graph build"
    )
    bi.add_argument("--json", action="store_true")
    bi.add_argument("--workdir", type=Path, default=Path("runs/bench-index"))
    _add_config_args(bi)
    be = bsub.add_parser("eval", help="retrieval-evaluation questions/s: Ray Data actor pool vs one process")
    from evaluation.bench import add_arguments as _eval_bench_arguments

    _eval_bench_arguments(be)
    bs = bsub.add_parser(
        "serve", help="QA route QPS and p50/p95/p99: batching on/off, 1 vs 2 replicas, autoscaling"
    )
    from serving.bench import add_arguments as _serve_bench_arguments

    _serve_bench_arguments(bs)
    bp = bsub.add_parser("plan", help="planner cost per question: paper-like calls vs hoprag's, same run")
    from evaluation.planner_bench import add_arguments as _plan_bench_arguments

    _plan_bench_arguments(bp)
    _add_config_args(bp)
    bt = bsub.add_parser(
        "train", help="GLM training throughput (1 vs 2 workers), retrieval latency, sampler scaling"
    )
    bt.add_argument(
        "--index", type=Path, default=Path("runs/demo/index"), help="index with processed questions"
    )
    bt.add_argument(
        "--steps", type=int, default=20, help="training steps per worker count (0 skips training)"
    )
    bt.add_argument("--questions", type=int, default=20, help="questions for the latency measurement")
    bt.add_argument("--workdir", type=Path, default=Path("runs/bench-train"))
    bt.add_argument("--json", action="store_true", help="one line of JSON")
    _add_submit_parser(sub)
    from cluster.cli import add_cluster_parser

    add_cluster_parser(sub)
    return parser


def _add_submit_parser(sub: argparse._SubParsersAction) -> None:
    su = sub.add_parser(
        "submit",
        help="run a hoprag command as a Ray job on a cluster (like `ray job submit`)",
        description="hoprag submit --address http://HEAD:8265 [--wait] [--follow] [options] -- "
        "index --corpus ... --out ...   The command after '--' is checked locally, then runs on the "
        "cluster as `python -m hoprag.cli ...` with the repository as working directory.",
    )
    su.add_argument(
        "--address",
        default=None,
        help="Ray job server, e.g. http://HEAD:8265 (default: $RAY_API_SERVER_ADDRESS, then $RAY_ADDRESS)",
    )
    su.add_argument("--wait", action="store_true", help="block until the job ends; exit 1 if it failed")
    su.add_argument("--follow", action="store_true", help="stream the job's logs until it ends")
    su.add_argument("--submission-id", default=None, help="job id (default: hoprag-<stage>-<time>-<rand>)")
    su.add_argument(
        "--working-dir",
        type=Path,
        default=None,
        help="uploaded as the job's working directory (default: this hoprag checkout)",
    )
    su.add_argument(
        "--no-working-dir", action="store_true", help="upload nothing (the image already holds hoprag)"
    )
    su.add_argument("--pip", action="append", default=[], metavar="REQ", help="pip requirement (repeatable)")
    su.add_argument("--image-uri", default=None, help="container image for the job (runtime_env image_uri)")
    su.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="job environment variable (repeatable)",
    )
    su.add_argument("--runtime-env", type=Path, default=None, help="YAML runtime_env to start from")
    su.add_argument("--entrypoint-num-cpus", type=float, default=None)
    su.add_argument("--entrypoint-num-gpus", type=float, default=None)
    su.add_argument("--entrypoint-memory", type=int, default=None, help="bytes")
    su.add_argument(
        "--entrypoint-resources", default=None, metavar="JSON", help="custom resources, e.g. '{\"head\": 1}'"
    )
    su.add_argument(
        "--metadata", action="append", default=[], metavar="KEY=VALUE", help="job metadata (repeatable)"
    )
    su.add_argument("--python", default="python", help="Python executable on the cluster (default: python)")
    su.add_argument(
        "hoprag_command", nargs=argparse.REMAINDER, help="-- then the hoprag command and its args"
    )


# `hoprag bench NAME` → the function running it (imported only when that benchmark runs).
_BENCHMARKS = {
    "index": ("indexing.bench", "run_index_benchmark"),
    "train": ("training.bench", "run_train_benchmark"),
    "plan": ("evaluation.planner_bench", "run_plan_benchmark"),
    "serve": ("serving.bench", "run_serve_benchmark"),
    "eval": ("evaluation.bench", "run_eval_benchmark"),
}


def _rewrite_argv(argv: list[str]) -> list[str]:
    # `hoprag index stats DIR` reads better than a separate top-level command.
    if len(argv) >= 2 and argv[0] == "index" and argv[1] == "stats":
        return ["index-stats", *argv[2:]]
    return argv


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hoprag`` console script."""
    args_list = _rewrite_argv(list(sys.argv[1:] if argv is None else argv))
    args = _build_parser().parse_args(args_list)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from hoprag.config import ConfigError

    try:
        if args.command == "index":
            return _cmd_index(args)
        if args.command == "index-stats":
            return _cmd_index_stats(args)
        if args.command == "generate":
            return _cmd_generate(args)
        if args.command == "demo":
            from hoprag.demo import run_demo

            return run_demo(
                args.workdir,
                fresh=args.fresh,
                config_path=args.config,
                overrides=args.overrides,
                train_steps=args.train_steps,
                serve=not args.no_serve,
            )
        if args.command == "train":
            return _cmd_train(args)
        if args.command == "ask":
            return _cmd_ask(args)
        if args.command == "serve":
            return _cmd_serve(args)
        if args.command == "eval" and args.eval == "run":
            return _cmd_eval_run(args)
        if args.command == "eval" and args.eval == "report":
            from evaluation.report import rebuild_report

            try:
                rebuild_report(args.eval_dir)
            except ValueError as exc:
                raise _UserError(str(exc)) from exc
            print(f"report rebuilt: {args.eval_dir / 'report.md'}")
            return 0
        if args.command == "eval" and args.eval == "retrieval":
            return _cmd_eval_retrieval(args)
        if args.command == "submit":
            return _cmd_submit(args)
        if args.command == "cluster":
            from cluster.cli import run_cluster_command

            try:
                return run_cluster_command(args)
            except ValueError as exc:
                raise _UserError(str(exc)) from exc
        if args.command == "bench":
            import importlib

            module, function = _BENCHMARKS[args.bench]
            return getattr(importlib.import_module(module), function)(args)
    except ConfigError as exc:
        print(f"hoprag: config error: {exc}", file=sys.stderr)
        return 2
    except _UserError as exc:
        print(f"hoprag: {exc}", file=sys.stderr)
        return 2
    return 1


class _UserError(Exception):
    pass


def _cmd_index(args: argparse.Namespace) -> int:
    from hoprag.config import load_config
    from hoprag.kg.store import KGIndexError
    from indexing.config import IndexConfig
    from indexing.corpus import CorpusError, read_corpus
    from indexing.pipeline import build_index

    config = load_config(IndexConfig, args.config, args.overrides)
    deletions = list(args.delete)
    if args.delete_file:
        deletions += [
            line.strip() for line in args.delete_file.read_text(encoding="utf-8").splitlines() if line.strip()
        ]
    if args.corpus is None and not deletions:
        raise _UserError("index: give --corpus (to build or --add) and/or --delete TITLE")
    if args.add and args.corpus is None:
        raise _UserError("index --add needs --corpus with the documents to add")
    try:
        corpus = read_corpus(args.corpus) if args.corpus else None
        summary = build_index(args.out, config, corpus=corpus, add=args.add, delete_titles=deletions)
    except (CorpusError, KGIndexError) as exc:
        raise _UserError(str(exc)) from exc
    if args.json:
        print(json.dumps(summary.to_dict(), default=str))
    else:
        print(summary.render())
        print(f"index written to {args.out}")
    return 0


def _cmd_index_stats(args: argparse.Namespace) -> int:
    from hoprag.kg.index import KGIndex
    from hoprag.kg.stats import index_stats, render_stats
    from hoprag.kg.store import KGIndexError

    try:
        stats = index_stats(KGIndex(args.index_dir, verify=args.verify))
    except KGIndexError as exc:
        raise _UserError(str(exc)) from exc
    print(json.dumps(stats) if args.json else render_stats(stats))
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    from hoprag.config import load_config
    from hoprag.kg.index import KGIndex
    from hoprag.kg.store import KGIndexError
    from hoprag.ray_runtime import RayConfig
    from training.config import TrainConfig
    from training.trainer import run_training

    overrides = list(args.overrides)
    if args.max_steps is not None:
        overrides.append(f"max_steps={args.max_steps}")
    if args.workers is not None:
        overrides.append(f"run.num_workers={args.workers}")
    config = load_config(TrainConfig, args.config, overrides)
    try:
        KGIndex(args.index)
    except KGIndexError as exc:
        raise _UserError(str(exc)) from exc
    metrics = run_training(args.index, args.out, config, RayConfig(address=args.ray_address))
    print(json.dumps({k: v for k, v in metrics.items() if isinstance(v, int | float | str)}))
    print(f"retriever exported to {args.out / 'retriever'}")
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from hoprag.config import load_config
    from serving.run import serve_foreground
    from serving.settings import QAAppSettings

    overrides = [*args.overrides, f"index={args.index}", f"retriever={args.retriever}"]
    settings = load_config(QAAppSettings, args.config, overrides)
    return serve_foreground(settings, args.host, args.port)


def _ask_url(args: argparse.Namespace) -> int:
    import os

    from serving.client import QAClient, QAClientError

    client = QAClient(args.url, token=args.token or os.environ.get("HOPRAG_TOKEN"))
    try:
        result = client.ask(args.question, mode=args.mode, top_k=args.top_k, trace=not args.json)
    except QAClientError as exc:
        raise _UserError(str(exc)) from exc
    if args.json:
        print(json.dumps(result))
        return 0
    from hoprag.planner.report import format_answer
    from hoprag.planner.trace import answer_from_dict

    print(format_answer(answer_from_dict(result["trace"])))
    print("timings: " + ", ".join(f"{k} {v:.3f} s" for k, v in result["timings"].items()))
    return 0


def _cmd_ask(args: argparse.Namespace) -> int:
    if args.url:
        return _ask_url(args)
    if args.index is None:
        raise _UserError("ask: give --index INDEX_DIR (answer locally) or --url URL (a running server)")
    from hoprag.config import load_config
    from hoprag.kg.store import KGIndexError
    from hoprag.planner.app import AskConfig, build_planner, build_retrieve_then_answer
    from hoprag.planner.planner import PlannerInputError
    from hoprag.planner.report import format_answer
    from hoprag.retrieval.loading import RetrieverSpecError

    config = load_config(AskConfig, args.config, args.overrides)
    try:
        if args.mode == "retrieve":
            result = build_retrieve_then_answer(args.index, config, args.retriever or "dense").answer(
                args.question, top_k=args.top_k
            )
        else:
            result = build_planner(args.index, config, args.retriever).answer(args.question)
    except (KGIndexError, RetrieverSpecError, PlannerInputError, ValueError) as exc:
        raise _UserError(str(exc)) from exc
    print(json.dumps(result.to_dict()) if args.json else format_answer(result))
    return 0


def _cmd_eval_run(args: argparse.Namespace) -> int:
    from hoprag.config import load_config

    overrides = list(args.overrides)
    if args.index:
        from evaluation.config import default_systems, resolve_benchmark

        if args.out is None:
            raise _UserError("eval run: --index needs --out EVAL_DIR")
        try:
            benches = [resolve_benchmark(i).model_copy(update={"limit": args.limit}) for i in args.index]
        except ValueError as exc:
            raise _UserError(str(exc)) from exc
        names = [b.name for b in benches]
        benches = [
            b.model_copy(update={"name": f"{b.name}-{i}"}) if names.count(b.name) > 1 else b
            for i, b in enumerate(benches)
        ]
        base = {
            "benchmarks": [b.model_dump(mode="json") for b in benches],
            "systems": [s.model_dump(mode="json") for s in default_systems(args.retriever)],
            "out": str(args.out),
        }
        from evaluation.config import EvalConfig

        config = load_config(EvalConfig, None, overrides, base=base)
    elif args.config is not None:
        from evaluation.config import EvalConfig

        if args.out is not None:
            overrides.append(f"out={args.out}")
        config = load_config(EvalConfig, args.config, overrides)
    else:
        raise _UserError("eval run: give --config FILE.yaml or --index INDEX_DIR ... --out EVAL_DIR")
    return _run_eval_config(config)


def _run_eval_config(config: EvalConfig, as_json: bool = False) -> int:
    from evaluation.runner import run_evaluation

    try:
        summary = run_evaluation(config, command="hoprag " + " ".join(sys.argv[1:]) if sys.argv[1:] else None)
    except ValueError as exc:
        raise _UserError(str(exc)) from exc
    if as_json:
        print(json.dumps({"results": summary["results"]}))
        return 0
    for r in summary["results"]:
        shown = ", ".join(f"{k} {v:.3f}" for k, v in r["metrics"].items())
        print(f"  {r['benchmark']:<16} {r['system']:<12} n={r['n']:<4} {shown}")
    print(f"report: {config.out / 'report.md'}; summary: {config.out / 'summary.json'}")
    return 0


def _cmd_eval_retrieval(args: argparse.Namespace) -> int:
    from evaluation.retrieval import evaluate_retrieval
    from hoprag.kg.index import KGIndex
    from hoprag.kg.store import KGIndexError
    from hoprag.retrieval.loading import RetrieverSpecError, load_retriever

    if args.out is not None and args.by:
        raise _UserError(
            "eval retrieval: --by is for the quick in-process form; with --out the report already "
            "breaks recall down by hops, question type, supporting documents and entity distance"
        )
    if args.out is not None:  # the full machinery: Ray Data job, resumable results, report
        from evaluation.config import EvalConfig, SystemSpec, resolve_benchmark

        name = Path(args.retriever).name if args.retriever != "dense" else "dense"
        try:
            bench = resolve_benchmark(str(args.index)).model_copy(update={"split": args.split})
            config = EvalConfig(
                benchmarks=[bench],
                systems=[SystemSpec(name=name, kind="retrieval", retriever=args.retriever)],
                out=args.out,
            )
        except ValueError as exc:
            raise _UserError(f"eval retrieval: {exc}") from exc
        return _run_eval_config(config, as_json=args.json)
    try:
        index = KGIndex(args.index)
        result = evaluate_retrieval(
            index, load_retriever(args.retriever, index), split=args.split, group_by=args.by
        )
    except (KGIndexError, RetrieverSpecError, ValueError) as exc:
        raise _UserError(str(exc)) from exc
    if args.json:
        print(json.dumps(result))
    else:
        print("  ".join(f"{k}={v}" for k, v in result.items()))
    return 0


def _key_values(pairs: Sequence[str], flag: str) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise _UserError(f"{flag} takes KEY=VALUE, got {pair!r}")
        out[key] = value
    return out


def _cmd_submit(args: argparse.Namespace) -> int:
    import os

    from pydantic import ValidationError

    from cluster.submit import SubmitError, SubmitOptions, load_runtime_env_file, project_root, run_submit

    command = list(args.hoprag_command)
    if command and command[0] == "--":
        command = command[1:]
    address = args.address or os.environ.get("RAY_API_SERVER_ADDRESS") or os.environ.get("RAY_ADDRESS")
    if not address:
        raise _UserError("submit: give --address http://HEAD:8265 (or set RAY_API_SERVER_ADDRESS)")
    try:
        resources = json.loads(args.entrypoint_resources) if args.entrypoint_resources else {}
    except json.JSONDecodeError as exc:
        raise _UserError(f"submit: --entrypoint-resources is not JSON: {exc}") from exc
    try:
        options = SubmitOptions(
            address=address,
            submission_id=args.submission_id,
            working_dir=None if args.no_working_dir else (args.working_dir or project_root()),
            pip=args.pip,
            image_uri=args.image_uri,
            env_vars=_key_values(args.env, "--env"),
            runtime_env=load_runtime_env_file(args.runtime_env) if args.runtime_env else {},
            entrypoint_num_cpus=args.entrypoint_num_cpus,
            entrypoint_num_gpus=args.entrypoint_num_gpus,
            entrypoint_memory=args.entrypoint_memory,
            entrypoint_resources=resources,
            metadata=_key_values(args.metadata, "--metadata"),
            python=args.python,
        )
        return run_submit(options, command, wait=args.wait, follow=args.follow)
    except ValidationError as exc:
        raise _UserError(f"submit: {exc}") from exc
    except SubmitError as exc:
        raise _UserError(str(exc)) from exc


def _cmd_generate(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from hoprag.data.synthetic import DOMAINS, SyntheticConfig, write_benchmark

    try:
        config = SyntheticConfig(
            seed=args.seed,
            num_documents=args.num_documents,
            num_train_questions=args.train_questions,
            num_test_questions=args.test_questions,
            domains=args.domains or list(DOMAINS),
            held_out_domains=args.held_out_domains,
        )
    except ValidationError as exc:
        raise _UserError(f"generate: {exc}") from exc
    bench = write_benchmark(config, args.out)
    print(
        f"wrote {len(bench.corpus)} documents, {len(bench.train)} train and {len(bench.test)} test questions "
        f"to {args.out / 'raw'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
