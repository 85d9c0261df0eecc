"""``hoprag eval run | report | retrieval | ceiling``: batch evaluation, reports, the recall shortcut,
and the GLM retriever's ceiling (sampler coverage, oracle-scorer recall)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hoprag.retrieval.base import DEFAULT_RETRIEVER
from hoprag_cli.common import UserError, add_config_args

if TYPE_CHECKING:
    from evaluation.config import EvalConfig


def register(sub: argparse._SubParsersAction) -> None:
    ev = sub.add_parser("eval", help="batch evaluation: benchmarks × systems, metrics, reports")
    evsub = ev.add_subparsers(dest="eval", required=True)
    erun = evsub.add_parser(
        "run", help="evaluate benchmarks × systems (Ray Data, resumable) and write the report"
    )
    erun.add_argument(
        "--index",
        action="append",
        default=[],
        help="index dir, registry name or GFM-RAG dataset dir (index: DIR/processed/hoprag-index) (repeatable)",
    )
    erun.add_argument(
        "--retriever",
        default=None,
        help="GLM retriever / run directory for the glm and glm-rag systems (default: routed)",
    )
    erun.add_argument("--out", type=Path, default=None, help="evaluation directory")
    erun.add_argument("--limit", type=int, default=None, help="first N questions per benchmark")
    add_config_args(erun)
    erun.set_defaults(handler=run_eval_run, run_dir_arg="out")
    erep = evsub.add_parser("report", help="rebuild summary.json, report.md and plots from stored results")
    erep.add_argument("eval_dir", type=Path)
    erep.set_defaults(handler=run_eval_report)
    er = evsub.add_parser("retrieval", help="document recall@2/@5 of a retriever on an index's questions")
    er.add_argument("--index", type=Path, required=True, help="index directory (with processed questions)")
    er.add_argument(
        "--retriever",
        default=DEFAULT_RETRIEVER,
        help="'dense', a retriever / training run directory, or several joined by '+' (rankings fused); "
        "default: routed, dense fused with the shipped GLM and PPR where those agree (docs/ppr.md)",
    )
    er.add_argument("--split", default="test", help="question split (train or test)")
    er.add_argument(
        "--setting",
        choices=("pooled", "distractor"),
        default="pooled",
        help="pooled: rank every document of the index; distractor: rank only each question's own "
        "paragraphs as its published file gave them (HotpotQA's distractor setting; an index of a "
        "HotpotQA, 2WikiMultihopQA-with-context or MuSiQue file; in-process form only)",
    )
    er.add_argument(
        "--validation-of",
        type=Path,
        default=None,
        metavar="RUN_DIR",
        help="only the questions this training run (or packaged-glm) held back for validation (its "
        "train_config.yaml's train_split, validation_fraction and seed; in-process form only)",
    )
    er.add_argument(
        "--doc-ranker",
        default=None,
        choices=("idf", "score_idf", "score"),
        help="rank the GLM's / GNN's entity scores into documents with this ranker instead of the one "
        "the retriever was trained with (docs/glm.md §8; in-process form only)",
    )
    er.add_argument(
        "--by",
        default=None,
        metavar="FIELD",
        help="also report per value of a question field (domain, type, hops; spelling on synthetic benchmarks)",
    )
    er.add_argument("--json", action="store_true", help="print one JSON object")
    er.add_argument(
        "--out",
        type=Path,
        default=None,
        help="run it as `eval run` instead (Ray Data, resumable) and write summary.json and report.md here",
    )
    er.add_argument(
        "--url",
        default=None,
        help="score a running QA app instead (POST /v1/qa, retrieve mode): the same questions and "
        "metrics, from what the endpoint returns; --retriever is then the app's",
    )
    er.add_argument("--token", default=None, help="bearer token for --url (default: $HOPRAG_TOKEN)")
    er.add_argument(
        "--per-question",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write each question's documents, seeds and linkers as JSONL (compare two runs with diff)",
    )
    er.set_defaults(handler=run_eval_retrieval, run_dir_arg="out")
    ec = evsub.add_parser(
        "ceiling",
        help="the GLM retriever's ceiling: supporting entities inside the sampled subgraphs, and "
        "recall@2/@5 of its document ranker fed with an oracle entity scorer (no model needed)",
    )
    ec.add_argument("--index", type=Path, required=True, help="index directory (with processed questions)")
    ec.add_argument(
        "--split",
        action="append",
        default=[],
        help="question split (repeatable; default: every split of the index, each reported apart)",
    )
    ec.add_argument(
        "--retriever",
        default=None,
        help="take the sampler and ranker settings from this retriever / training run directory",
    )
    ec.add_argument(
        "--hops",
        type=int,
        nargs="+",
        default=None,
        choices=range(1, 7),
        metavar="N",
        help="sampler max_hops values to measure, one result each (default: the settings' own)",
    )
    ec.add_argument(
        "--by", default=None, metavar="FIELD", help="also per value of a question field (domain, hops)"
    )
    ec.add_argument("--json", action="store_true", help="print one JSON object")
    add_config_args(ec)
    ec.set_defaults(handler=run_eval_ceiling)


def run_eval_run(args: argparse.Namespace) -> int:
    from hoprag.config import load_config

    overrides = list(args.overrides)
    if args.limit is not None and args.limit < 1:
        raise UserError(f"eval run: --limit must be at least 1, got {args.limit}")
    if args.index:
        from evaluation.config import default_systems, resolve_benchmark

        if args.out is None:
            raise UserError("eval run: --index needs --out EVAL_DIR")
        try:
            benches = [resolve_benchmark(i).model_copy(update={"limit": args.limit}) for i in args.index]
        except ValueError as exc:
            raise UserError(str(exc)) from exc
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
        if args.limit is not None:  # the flag counts over the config's own limits, as with --index
            limited = [b.model_copy(update={"limit": args.limit}) for b in config.benchmarks]
            config = config.model_copy(update={"benchmarks": limited})
    else:
        raise UserError("eval run: give --config FILE.yaml or --index INDEX_DIR ... --out EVAL_DIR")
    return _run_eval_config(config)


def run_eval_report(args: argparse.Namespace) -> int:
    from evaluation.report import rebuild_report

    try:
        rebuild_report(args.eval_dir)
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    print(f"report rebuilt: {args.eval_dir / 'report.md'}")
    return 0


def _run_eval_config(config: EvalConfig, as_json: bool = False) -> int:
    from evaluation.runner import run_evaluation

    try:
        summary = run_evaluation(config, command="hoprag " + " ".join(sys.argv[1:]) if sys.argv[1:] else None)
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    if as_json:
        print(json.dumps({"results": summary["results"]}))
        return 0
    for r in summary["results"]:
        shown = ", ".join(f"{k} {v:.3f}" for k, v in r["metrics"].items())
        print(f"  {r['benchmark']:<16} {r['system']:<12} n={r['n']:<4} {shown}")
    print(f"report: {config.out / 'report.md'}; summary: {config.out / 'summary.json'}")
    return 0


def run_eval_retrieval(args: argparse.Namespace) -> int:
    from evaluation.retrieval import evaluate_retrieval
    from hoprag.kg.index import KGIndex
    from hoprag.kg.store import KGIndexError
    from hoprag.retrieval.loading import RetrieverSpecError, load_retriever, with_doc_ranker

    if args.out is not None and args.by:
        raise UserError(
            "eval retrieval: --by is for the quick in-process form; with --out the report already "
            "breaks recall down by hops, question type, supporting documents and entity distance"
        )
    setting = None if args.setting == "pooled" else args.setting
    for flag, value in (
        ("--doc-ranker", args.doc_ranker),
        ("--validation-of", args.validation_of),
        ("--setting", setting),
    ):
        if value is not None and (args.out is not None or args.url is not None):
            raise UserError(f"eval retrieval: {flag} is for the quick in-process form (no --out, no --url)")
    if args.url is not None:
        return _eval_endpoint(args)
    given, args.index = args.index, _index_of(args.index)

    if args.out is not None:  # the full machinery: Ray Data job, resumable results, report
        from evaluation.config import EvalConfig, SystemSpec, resolve_benchmark
        from hoprag.qa.builder import index_llm_config

        try:
            name = retrieval_system_name(args.retriever)
        except ValueError as exc:
            raise UserError(f"eval retrieval: {exc}") from exc
        try:
            bench = resolve_benchmark(str(given)).model_copy(update={"split": args.split})
            config = EvalConfig(
                benchmarks=[bench],
                systems=[SystemSpec(name=name, kind="retrieval", retriever=args.retriever)],
                out=args.out,
                llm=index_llm_config(KGIndex(args.index)),  # links as the in-process form does
            )
        except (KGIndexError, ValueError) as exc:
            raise UserError(f"eval retrieval: {exc}") from exc
        return _run_eval_config(config, as_json=args.json)
    try:
        index = KGIndex(args.index)
        split, ids = args.split, None
        if args.validation_of is not None:
            split, ids = _validation_questions(index, args.validation_of)
        retriever = load_retriever(args.retriever, index)
        if args.doc_ranker is not None:
            retriever = with_doc_ranker(retriever, args.doc_ranker)
        result = evaluate_retrieval(
            index, retriever, split=split, group_by=args.by, ids=ids, setting=args.setting
        )
    except (KGIndexError, RetrieverSpecError, ValueError) as exc:
        raise UserError(str(exc)) from exc
    _print_result(result, args.json, args.per_question)
    return 0


def _validation_questions(index: Any, run_dir: Path) -> tuple[str, set[str]]:
    """``(split, ids)`` of the questions the training run ``run_dir`` held back for validation on
    ``index`` (the split training makes, from the run's own train_config.yaml)."""
    from hoprag.config import load_config
    from hoprag.glm.artifact import PACKAGED_GLM_NAME
    from hoprag.paths import PACKAGED_GLM
    from training.config import TrainConfig
    from training.trainset import split_questions

    run_dir = PACKAGED_GLM if str(run_dir) == PACKAGED_GLM_NAME else run_dir
    config_file = run_dir / "train_config.yaml"
    if not config_file.is_file():
        raise UserError(
            f"eval retrieval: --validation-of {run_dir}: no train_config.yaml (not a training run directory)"
        )
    config = load_config(TrainConfig, config_file, [])
    if index.questions is None:
        raise UserError(f"eval retrieval: {index.path} has no processed questions")
    _, held_back = split_questions(index.questions.to_pylist(), config)
    if not held_back:
        raise UserError(
            f"eval retrieval: {run_dir} held back no questions of this index for validation "
            f"(validation_fraction {config.validation_fraction}, split {config.train_split!r})"
        )
    return config.train_split, {r["id"] for r in held_back}


def _index_of(path: Path) -> Path:
    """``--index``: an index directory, or a GFM-RAG-layout dataset directory, whose index is
    ``DATA/processed/hoprag-index`` (the error names the command that builds it)."""
    from evaluation.config import gfm_rag_index_command, is_gfm_rag_dir, resolve_benchmark

    if not (path.is_dir() and is_gfm_rag_dir(path)):
        return path
    try:
        index = resolve_benchmark(str(path)).index
    except ValueError as exc:
        raise UserError(f"eval retrieval: {exc}") from exc
    if not (index / "manifest.json").is_file():
        raise UserError(
            f"eval retrieval: {path} is a GFM-RAG dataset directory without a hoprag index; build it with "
            f"`{gfm_rag_index_command(path, index)}`"
        )
    return index


def _eval_endpoint(args: argparse.Namespace) -> int:
    import os

    from evaluation.retrieval import evaluate_endpoint
    from hoprag.kg.index import KGIndex
    from hoprag.kg.store import KGIndexError
    from serving.client import QAClient

    if args.out is not None:
        raise UserError("eval retrieval: --url scores a running app in process; it takes no --out")
    client = QAClient(args.url, token=args.token or os.environ.get("HOPRAG_TOKEN"))
    try:
        result = evaluate_endpoint(
            KGIndex(args.index),
            lambda question, top_k: client.ask(question, mode="retrieve", top_k=top_k, trace=True),
            split=args.split,
            group_by=args.by,
        )
    except (KGIndexError, ValueError) as exc:
        raise UserError(str(exc)) from exc
    _print_result(result, args.json, args.per_question)
    return 0


def _print_result(result: dict, as_json: bool, per_question: Path | None = None) -> None:
    records = result.pop("per_question", [])
    if per_question is not None:
        per_question.parent.mkdir(parents=True, exist_ok=True)
        per_question.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    print(json.dumps(result) if as_json else "  ".join(f"{k}={v}" for k, v in result.items()))


def retrieval_system_name(spec: str) -> str:
    """The eval system name of a retriever spec: ``dense``, a run directory's name, or the parts of
    a fused spec joined by ``-rrf-`` (``runs/glm+dense`` → ``glm-rrf-dense``)."""
    from hoprag.retrieval.loading import retriever_spec_parts

    return "-rrf-".join(Path(part).name for part in retriever_spec_parts(spec))


def run_eval_ceiling(args: argparse.Namespace) -> int:
    """Settings from ``--retriever`` or a ``hoprag train`` config (``--config``, ``--set glm.…``),
    else GLMSettings' defaults; one result per split and ``--hops`` value."""
    from evaluation.ceiling import format_ceiling, measure_ceiling
    from hoprag.config import load_config
    from hoprag.glm.artifact import RetrieverLoadError, read_retriever_meta
    from hoprag.kg.index import KGIndex
    from hoprag.kg.store import KGIndexError
    from training.config import TrainConfig

    if args.retriever is not None and args.config is not None:
        raise UserError("eval ceiling: --retriever and --config both give the GLM settings; give one")
    base: dict[str, Any] = {}
    if args.retriever is not None:
        try:
            _, meta = read_retriever_meta(args.retriever)
        except RetrieverLoadError as exc:
            raise UserError(str(exc)) from exc
        base = {"glm": meta["settings"]}
    settings = load_config(TrainConfig, args.config, args.overrides, base=base).glm
    try:
        index = KGIndex(args.index)
    except KGIndexError as exc:
        raise UserError(str(exc)) from exc
    if index.questions is None:
        raise UserError(f"{args.index} has no processed questions; index a corpus with train.json/test.json")
    splits = args.split or sorted(set(index.questions.column("split").to_pylist()))
    results = []
    for split in splits:
        for hops in args.hops or [settings.sampler.max_hops]:
            sampler = settings.sampler.model_copy(update={"max_hops": hops})
            try:
                results.append(
                    measure_ceiling(
                        index, settings.model_copy(update={"sampler": sampler}), split, group_by=args.by
                    )
                )
            except ValueError as exc:
                raise UserError(str(exc)) from exc
    if args.json:
        print(json.dumps({"index": str(args.index), "results": results}))
    else:
        for result in results:
            print("\n".join(format_ceiling(result)))
    return 0
