"""``hoprag bench NAME``: each stage's benchmark (results go to docs/benchmarks.md by hand)."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

from hoprag_cli.common import UserError, add_config_args

# `hoprag bench NAME` → the function running it (imported only when that benchmark runs).
BENCHMARKS = {
    "index": ("benchmarks.index", "run_index_benchmark"),
    "train": ("benchmarks.train", "run_train_benchmark"),
    "glm-step": ("benchmarks.glm_step", "run_glm_step_benchmark"),
    "plan": ("benchmarks.plan", "run_plan_benchmark"),
    "steps": ("benchmarks.steps", "run_steps_benchmark"),
    "serve": ("benchmarks.serve", "run_serve_benchmark"),
    "update": ("benchmarks.update", "run_update_benchmark"),
    "eval": ("benchmarks.eval", "run_eval_benchmark"),
    "extract": ("benchmarks.extract", "run_extract_benchmark"),
    "evidences": ("benchmarks.evidences", "run_evidence_benchmark"),
    "search": ("benchmarks.search", "run_search_benchmark"),
    "graph": ("benchmarks.graph", "run_graph_benchmark"),
    "grammar": ("benchmarks.grammar", "run_grammar_benchmark"),
    "formats": ("benchmarks.formats", "run_formats_benchmark"),
    "memory": ("benchmarks.memory", "run_memory_benchmark"),
    "llm": ("benchmarks.llm", "run_llm_benchmark"),
    "ppr": ("benchmarks.ppr", "run_ppr_benchmark"),
    "routing": ("benchmarks.routing", "run_routing_benchmark"),
}


def register(sub: argparse._SubParsersAction) -> None:
    from benchmarks.eval import add_arguments as add_eval_bench_arguments
    from benchmarks.evidences import add_arguments as add_evidences_bench_arguments
    from benchmarks.formats import add_arguments as add_formats_bench_arguments
    from benchmarks.glm_step import add_arguments as add_glm_step_arguments
    from benchmarks.grammar import add_arguments as add_grammar_bench_arguments
    from benchmarks.graph import add_arguments as add_graph_bench_arguments
    from benchmarks.llm import add_arguments as add_llm_bench_arguments
    from benchmarks.memory import add_arguments as add_memory_bench_arguments
    from benchmarks.plan import add_arguments as add_plan_bench_arguments
    from benchmarks.ppr import add_arguments as add_ppr_bench_arguments
    from benchmarks.routing import add_arguments as add_routing_bench_arguments
    from benchmarks.search import add_arguments as add_search_bench_arguments
    from benchmarks.serve import add_arguments as add_serve_bench_arguments
    from benchmarks.steps import add_arguments as add_steps_bench_arguments
    from benchmarks.update import add_arguments as add_update_bench_arguments

    b = sub.add_parser("bench", help="benchmarks (results go to docs/benchmarks.md by hand)")
    b.set_defaults(handler=run_bench, run_dir_arg="workdir")
    bsub = b.add_subparsers(dest="bench", required=True)
    add_llm_bench_arguments(
        bsub.add_parser(
            "llm",
            help="CPU engines x model tiers: s/call, prefill/decode tok/s per prompt kind, batched OpenIE, "
            "reading EM/F1, decode beside a busy core",
        )
    )
    bi = bsub.add_parser("index", help="Ray Data extraction vs a sequential loop; graph build at scale")
    bi.add_argument("--docs", type=int, default=48, help="documents for the LLM throughput comparison")
    bi.add_argument("--sequential-docs", type=int, default=12, help="documents for the sequential baseline")
    bi.add_argument(
        "--graph-triples", type=int, default=1_000_000, help="synthetic triples for the graph build"
    )
    bi.add_argument("--json", action="store_true")
    bi.add_argument("--workdir", type=Path, default=Path("runs/bench-index"))
    add_config_args(bi)
    bx = bsub.add_parser(
        "extract",
        help="OpenIE precision/recall/F1 against a generated benchmark's facts.json, several LLMs in one run",
        description="Extract triples from a generated benchmark's documents with each system (default: the "
        "embedded Gemma 3 270M with the current few-shot prompt, and the reference oracle) through "
        "indexing's extraction code, and score them against raw/facts.json: entity-pair and "
        "relation-agreeing precision/recall/F1, docs/min and prompt tokens per document "
        "(benchmarks/extract.py has the scoring rules).",
    )
    bx.add_argument("--benchmark", type=Path, required=True, help="a `hoprag generate` output directory")
    bx.add_argument(
        "--held-out-domains", action="store_true", help="only documents of the benchmark's held-out domains"
    )
    bx.add_argument(
        "--held-out-templates",
        action="store_true",
        help="only documents that use a held-out template (the benchmark's test side)",
    )
    bx.add_argument(
        "--seen-templates",
        action="store_true",
        help="only documents that use no held-out template (what a model trained on the training side saw)",
    )
    bx.add_argument("--docs", type=int, default=40, help="documents to sample (seeded) after the filters")
    bx.add_argument("--seed", type=int, default=0, help="seed of the document sample")
    bx.add_argument(
        "--systems", nargs="+", default=None, metavar="NAME", help="systems to run (default: all configured)"
    )
    bx.add_argument(
        "--llm-config",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="add system NAME from a YAML LLM backend config (or a file with an 'llm' section, e.g. "
        "indexing/configs/embedded-cpu.yaml); repeatable",
    )
    bx.add_argument("--json", action="store_true", help="one line of JSON")
    bx.add_argument("--workdir", type=Path, default=Path("runs/bench-extract"), help="results and logs")
    add_config_args(bx)
    bv = bsub.add_parser(
        "evidences",
        help="extraction on real paragraphs against 2WikiMultihopQA's gold facts: pair recall, output forms",
        description="Extract triples from the supporting paragraphs of a 2WikiMultihopQA file's questions "
        "with each system and look for every gold fact (evidences) among them; count the outputs lost "
        "to their form (benchmarks/evidences.py has the rules).",
    )
    add_evidences_bench_arguments(bv)
    add_config_args(bv)
    be = bsub.add_parser("eval", help="retrieval-evaluation questions/s: Ray Data actor pool vs one process")
    add_eval_bench_arguments(be)
    bs = bsub.add_parser(
        "serve", help="QA route QPS and p50/p95/p99: batching on/off, 1 vs 2 replicas, autoscaling"
    )
    add_serve_bench_arguments(bs)
    bu = bsub.add_parser(
        "update",
        help="a live document upload to a served index under steady traffic: seconds until the new "
        "documents are answered from, failed requests and latencies during the swap",
    )
    add_update_bench_arguments(bu)
    bq = bsub.add_parser(
        "search", help="ANN libraries vs exact search (recall, latency, build) and bm25s vs hoprag's BM25"
    )
    add_search_bench_arguments(bq)
    bg = bsub.add_parser(
        "graph",
        help="the evidence graph's legibility at 10-50 triples (label overlaps, hidden labels, font size "
        "on a desktop page) and layout time, label placement on and off",
    )
    add_graph_bench_arguments(bg)
    bgr = bsub.add_parser(
        "grammar",
        help="building the constrained-decoding view of a tokenizer: hoprag's against llguidance's own, "
        "same run, checked token by token",
    )
    add_grammar_bench_arguments(bgr)
    bfm = bsub.add_parser(
        "formats",
        help="reading a HotpotQA-train-sized published file (written from the sample): hoprag's streaming "
        "reader against json.load, seconds and peak RSS",
    )
    add_formats_bench_arguments(bfm)
    add_ppr_bench_arguments(
        bsub.add_parser(
            "ppr",
            help="HippoRAG 2's PPR retriever at scale (synthetic 1M triples, real indexes): load, latency "
            "p50/p95 and peak RSS beside dense and the GLM",
        )
    )
    add_routing_bench_arguments(
        bsub.add_parser(
            "routing",
            help="the routed retriever: its agreement threshold fitted on the real samples' train portions, "
            "then measured on their test portions (and held-out indexes) beside dense",
        )
    )
    bmg = bsub.add_parser(
        "memory",
        help="the memory graph's thesis vertices: build seconds and bytes beside the rest of the index",
    )
    add_memory_bench_arguments(bmg)
    bp = bsub.add_parser("plan", help="planner cost per question: paper-like calls vs hoprag's, same run")
    add_plan_bench_arguments(bp)
    add_config_args(bp)
    bst = bsub.add_parser(
        "steps",
        help="the planner's plan and update prompts against a generated benchmark's gold search plans, "
        "several LLMs in one run",
    )
    add_steps_bench_arguments(bst)
    add_config_args(bst)
    bgs = bsub.add_parser(
        "glm-step",
        help="one GLM training step at the paper's size (t5-large, 600-triple subgraphs, batch 2) on an "
        "accelerator: step time, peak memory and MFU, bf16 against fp32, activation checkpointing off and on",
    )
    add_glm_step_arguments(bgs)
    bt = bsub.add_parser(
        "train",
        help="GLM/GNN training throughput (1 vs 2 workers), retrieval latency (by subgraph size and by "
        "backbone), sampler scaling",
    )
    bt.add_argument(
        "--index", type=Path, default=Path("runs/demo/index"), help="index with processed questions"
    )
    bt.add_argument(
        "--steps", type=int, default=20, help="training steps per worker count (0 skips training)"
    )
    bt.add_argument("--questions", type=int, default=20, help="questions for the latency measurements")
    bt.add_argument(
        "--budgets",
        type=int,
        nargs="*",
        default=[100, 300, 600],
        metavar="TRIPLES",
        help="max_triplets of the embedded GLM's latency-by-subgraph-size section (none: skip it)",
    )
    bt.add_argument(
        "--backbones",
        nargs="*",
        default=["embedded", "minilm"],
        metavar="MODEL",
        help="GLM backbones (backbone.model values) whose latency at 100 triples is compared stage by "
        "stage, taking turns on the same subgraphs; ratios are to the first (none: skip it)",
    )
    bt.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="questions per forward in the batched part of the backbone comparison (default: "
        "GLMSettings.batch_size, what a retriever uses)",
    )
    bt.add_argument(
        "--gnn",
        action="store_true",
        help="GNN retrieval latency on random 10k- and 1M-triple KGs, next to the MiniLM GLM (docs/gnn.md)",
    )
    bt.add_argument(
        "--retrievers",
        nargs="+",
        choices=["glm", "gnn"],
        default=["glm"],
        help="whose training throughput (1 vs 2 workers) to measure",
    )
    bt.add_argument(
        "--frozen-local-layers",
        type=int,
        nargs="*",
        default=[],
        metavar="K",
        help="MiniLM GLM training step (one process, batch 2, 100 triples) for each "
        "backbone.frozen_local_layers value, taking turns on the same subgraphs; ratios are to the first "
        "(none: skip it)",
    )
    bt.add_argument(
        "--frozen-steps", type=int, default=10, help="timed steps per value of --frozen-local-layers"
    )
    bt.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    bt.add_argument("--workdir", type=Path, default=Path("runs/bench-train"))
    bt.add_argument("--json", action="store_true", help="one line of JSON")


def run_bench(args: argparse.Namespace) -> int:
    module, function = BENCHMARKS[args.bench]
    stage = importlib.import_module(module)
    try:
        return int(getattr(stage, function)(args))
    except ValueError as exc:
        # A stage's own input errors (e.g. bench extract's BenchInputError) are the user's to fix.
        if type(exc).__name__ == "BenchInputError":
            raise UserError(f"bench {args.bench}: {exc}") from exc
        raise
