"""``hoprag index``: build, resume, extend or shrink a KG index; ``hoprag index stats DIR``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hoprag_cli.common import UserError, add_config_args

if TYPE_CHECKING:
    from indexing.config import IndexConfig


def register(sub: argparse._SubParsersAction) -> None:
    from indexing.formats import FORMATS

    p = sub.add_parser(
        "index",
        help="build, resume, extend or shrink a KG index (`hoprag index stats DIR` prints statistics)",
        description="Corpus → LLM OpenIE (Ray Data) → KG index. Re-running resumes from the extraction "
        "cache; --add adds documents; --delete removes them. --graph builds the index from a pre-built "
        "GFM-RAG graph (processed/stage1/{nodes,relations,edges}.csv) without any LLM.",
    )
    p.add_argument(
        "--corpus",
        type=Path,
        help="GFM-RAG raw dir (DIR/raw/documents.json or DIR/raw/dataset_corpus.json), .json, .jsonl or "
        ".parquet; or a published benchmark file (see --format)",
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="auto",
        help="how to read --corpus: gfmrag (hoprag's own inputs), hotpotqa / 2wikimultihopqa (JSON list "
        "with context), musique (JSONL), hipporag (HippoRAG 2's NAME_corpus.json + NAME.json: the "
        "directory or either file); auto (default) detects a published format when the layout is "
        "unambiguous. Published formats index every paragraph (pooled) and their questions as 'test'",
    )
    p.add_argument(
        "--train-fraction",
        type=float,
        default=0.0,
        metavar="F",
        help="published formats: put this fraction of the questions in the 'train' split (chosen by a hash "
        "of the question id, so a question's split never changes), the rest in 'test', for `hoprag train` "
        "on one portion and `hoprag eval` on the other (default 0: all 'test')",
    )
    p.add_argument(
        "--graph",
        type=Path,
        help="a pre-built GFM-RAG graph: DIR/processed/stage1 (or DIR) with nodes.csv, relations.csv, "
        "edges.csv and optional train.json/test.json (no LLM is run)",
    )
    p.add_argument("--out", type=Path, help="index directory (created or updated; optional with --dry-run)")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="read and validate the whole input without loading any model or writing an index: "
        "documents, questions per split, problems by kind and where, estimated LLM calls and time; "
        "exit status as a real run would give (with --json the last line is one JSON object)",
    )
    p.add_argument("--add", action="store_true", help="add the corpus's documents to the existing index")
    p.add_argument(
        "--delete", action="append", default=[], metavar="TITLE", help="remove a document (repeatable)"
    )
    p.add_argument("--delete-file", type=Path, help="file with one document title per line to remove")
    p.add_argument(
        "--json", action="store_true", help="print the build summary (or the dry run) as one JSON object"
    )
    add_config_args(p)
    p.set_defaults(handler=run_index, run_dir_arg="out")

    s = sub.add_parser(
        "index-stats", help="KG statistics of an index (also spelled `hoprag index stats DIR`)"
    )
    s.add_argument("index_dir", type=Path)
    s.add_argument("--json", action="store_true", help="print one JSON object")
    s.add_argument(
        "--verify",
        action="store_true",
        help="verify the sha256 of every snapshot file (default: small files fully, large ones by "
        "size and sampled chunks)",
    )
    s.set_defaults(handler=run_index_stats)


def run_index(args: argparse.Namespace) -> int:
    from hoprag.config import load_config
    from hoprag.kg.store import KGIndexError
    from indexing.config import IndexConfig
    from indexing.corpus import CorpusError
    from indexing.formats import NothingToIndexError, read_published
    from indexing.pipeline import build_index

    config = load_config(IndexConfig, args.config, args.overrides)
    if args.out is None and not args.dry_run:
        raise UserError("index: give --out INDEX_DIR (only --dry-run goes without)")
    if args.graph is not None:
        if args.dry_run:
            raise UserError("index --dry-run reads a --corpus; a pre-built --graph runs no LLM")
        return _run_graph_index(args, config)
    deletions = list(args.delete)
    if args.delete_file:
        deletions += [
            line.strip() for line in args.delete_file.read_text(encoding="utf-8").splitlines() if line.strip()
        ]
    if args.corpus is None and not deletions:
        raise UserError("index: give --corpus (to build or --add) and/or --delete TITLE")
    if args.add and args.corpus is None:
        raise UserError("index --add needs --corpus with the documents to add")
    if args.dry_run and args.corpus is None:
        raise UserError("index --dry-run needs --corpus (the input to check)")
    try:
        corpus = read_published(args.corpus, args.format, args.train_fraction) if args.corpus else None
        if corpus is not None:
            _report_problems(args, corpus)
        if args.dry_run:
            return _print_dry_run(args, corpus, config)
        summary = build_index(args.out, config, corpus=corpus, add=args.add, delete_titles=deletions)
    except NothingToIndexError as exc:
        _write_problems(args, exc.read)
        if args.dry_run and args.json:
            print(json.dumps(_empty_dry_run(args, exc)))
        raise UserError(str(exc)) from exc
    except (CorpusError, KGIndexError) as exc:
        raise UserError(str(exc)) from exc
    return _print_summary(args, summary, f"index written to {args.out}")


def _report_problems(args: argparse.Namespace, corpus: Any) -> None:
    """The read's report on stderr (its first ten problems) and all its problems in a file."""
    if corpus.report:
        print(f"read {args.corpus} as {corpus.format}: " + "\n".join(corpus.report), file=sys.stderr)
    _write_problems(args, corpus.read)


def _write_problems(args: argparse.Namespace, read: Any) -> None:
    """Every problem of a read, one JSON object a line, in ``OUT/logs/problems.jsonl``."""
    if not read.problems or args.out is None:
        return
    path = args.out / "logs" / "problems.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for problem in read.problems:
            handle.write(json.dumps(problem.to_dict(), ensure_ascii=False) + "\n")
    print(f"all {len(read.problems)} problems, one per line: {path}", file=sys.stderr)


def _empty_dry_run(args: argparse.Namespace, exc: Any) -> dict[str, Any]:
    """A dry run's JSON object for an input with nothing to index (the run would fail)."""
    from indexing.problems import SUMMARY_PROBLEMS

    return {
        "source": str(args.corpus),
        "format": exc.format,
        "items": exc.read.items,
        "documents": exc.documents,
        "questions": exc.questions,
        "problems": dict(exc.read.counts),
        "problem_locations": [str(p.where) for p in exc.read.problems[:SUMMARY_PROBLEMS]],
        "error": str(exc).splitlines()[0],
    }


def _print_dry_run(args: argparse.Namespace, corpus: Any, config: IndexConfig) -> int:
    from indexing.dry_run import plan_build

    plan = plan_build(corpus, config)
    print(json.dumps(plan.to_dict()) if args.json else plan.render())
    return 0


def _run_graph_index(args: argparse.Namespace, config: IndexConfig) -> int:
    """``hoprag index --graph DIR/processed/stage1 --out INDEX``."""
    from hoprag.kg.store import KGIndexError
    from indexing.corpus import CorpusError
    from indexing.gfmrag import read_stage1
    from indexing.pipeline import build_index_from_graph

    if args.corpus is not None or args.add or args.delete or args.delete_file:
        raise UserError("index --graph builds a whole index: it takes no --corpus, --add or --delete")
    try:
        graph = read_stage1(args.graph, synonym_edges=config.synonyms.enabled)
        summary = build_index_from_graph(args.out, config, graph)
    except (CorpusError, KGIndexError) as exc:
        raise UserError(str(exc)) from exc
    return _print_summary(
        args, summary, f"index written to {args.out} (from the pre-built graph {graph.path})"
    )


def _print_summary(args: argparse.Namespace, summary: Any, written: str) -> int:
    """A build summary as one JSON object (``--json``) or as text followed by ``written``."""
    if args.json:
        print(json.dumps(summary.to_dict(), default=str))
    else:
        print(summary.render())
        print(written)
    return 0


def run_index_stats(args: argparse.Namespace) -> int:
    from hoprag.kg.index import KGIndex
    from hoprag.kg.stats import index_stats, render_stats
    from hoprag.kg.store import KGIndexError

    try:
        stats = index_stats(KGIndex(args.index_dir, verify="full" if args.verify else "fast"))
    except KGIndexError as exc:
        raise UserError(str(exc)) from exc
    print(json.dumps(stats) if args.json else render_stats(stats))
    return 0
