"""``hoprag generate``: a synthetic multi-hop QA benchmark in the GFM-RAG raw layout."""

from __future__ import annotations

import argparse
from pathlib import Path

from hoprag_cli.common import UserError


def register(sub: argparse._SubParsersAction) -> None:
    g = sub.add_parser("generate", help="write a synthetic multi-hop QA benchmark (GFM-RAG raw format)")
    g.add_argument("--out", type=Path, required=True, help="output directory (OUT/raw/*.json)")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--num-documents", type=int, default=1000)
    g.add_argument("--train-questions", type=int, default=200)
    g.add_argument("--test-questions", type=int, default=100)
    g.add_argument(
        "--domains",
        nargs="+",
        default=None,
        help="domains to include (default: biomedical business film; music and sports are opt-in)",
    )
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
    ph = g.add_argument_group(
        "phrasing", "how documents word their facts (defaults: SyntheticConfig.phrasing; docs/synthetic.md)"
    )
    ph.add_argument(
        "--held-out-templates",
        nargs="+",
        default=None,
        metavar="ID",
        help="template ids (RELATION/K, e.g. born_in/2; world.json lists them) used only in test-side "
        "documents (supporting documents of test questions only)",
    )
    ph.add_argument(
        "--held-out-template-fraction",
        type=float,
        default=None,
        metavar="F",
        help="also hold out this fraction of each relation's templates (the same ones for every seed)",
    )
    ph.add_argument("--pronoun-probability", type=float, default=None, metavar="P")
    ph.add_argument("--two-fact-probability", type=float, default=None, metavar="P")
    ph.add_argument("--filler-sentence-probability", type=float, default=None, metavar="P")
    ph.add_argument("--max-filler-sentences", type=int, default=None, metavar="N")
    g.set_defaults(handler=run_generate)


_PHRASING_FLAGS = (
    "held_out_templates",
    "held_out_template_fraction",
    "pronoun_probability",
    "two_fact_probability",
    "filler_sentence_probability",
    "max_filler_sentences",
)


def run_generate(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from synthetic import DEFAULT_DOMAINS, SyntheticConfig, write_benchmark

    optional: dict[str, object] = {}
    if args.variant_spelling_fraction is not None:
        optional["variant_spelling_fraction"] = args.variant_spelling_fraction
    phrasing = {k: getattr(args, k) for k in _PHRASING_FLAGS if getattr(args, k) is not None}
    if phrasing:
        optional["phrasing"] = phrasing
    try:
        config = SyntheticConfig(
            seed=args.seed,
            num_documents=args.num_documents,
            num_train_questions=args.train_questions,
            num_test_questions=args.test_questions,
            domains=args.domains or list(DEFAULT_DOMAINS),
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
    if bench.held_out_templates:
        print(
            f"{len(bench.held_out_templates)} held-out templates, used only in the "
            f"{len(bench.test_side_documents)} test-side documents (world.json 'phrasing')"
        )
    return 0
