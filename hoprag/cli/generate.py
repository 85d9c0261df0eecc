"""``hoprag generate``: a synthetic multi-hop QA benchmark in the GFM-RAG raw layout."""

from __future__ import annotations

import argparse
from pathlib import Path

from hoprag.cli.common import UserError


def register(sub: argparse._SubParsersAction) -> None:
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
    g.add_argument(
        "--variant-spelling-fraction",
        type=float,
        default=None,
        metavar="F",
        help="fraction of questions whose topic entity is respelled (case, punctuation, abbreviation, "
        "'the'); recorded per question as 'spelling' (default: 0.2)",
    )
    g.set_defaults(handler=run_generate)


def run_generate(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from hoprag.data.synthetic import DOMAINS, SyntheticConfig, write_benchmark

    optional = {}
    if args.variant_spelling_fraction is not None:
        optional["variant_spelling_fraction"] = args.variant_spelling_fraction
    try:
        config = SyntheticConfig(
            seed=args.seed,
            num_documents=args.num_documents,
            num_train_questions=args.train_questions,
            num_test_questions=args.test_questions,
            domains=args.domains or list(DOMAINS),
            held_out_domains=args.held_out_domains,
            **optional,
        )
    except ValidationError as exc:
        raise UserError(f"generate: {exc}") from exc
    bench = write_benchmark(config, args.out)
    print(
        f"wrote {len(bench.corpus)} documents, {len(bench.train)} train and {len(bench.test)} test questions "
        f"to {args.out / 'raw'}"
    )
    return 0
