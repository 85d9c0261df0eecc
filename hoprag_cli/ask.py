"""``hoprag ask``: answer one question locally (``--index``) or through a running app (``--url``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hoprag_cli.common import UserError, add_config_args


def register(sub: argparse._SubParsersAction) -> None:
    a = sub.add_parser("ask", help="answer a question (PAI-2 planner or single-shot GLM-RAG)")
    a.add_argument("question", help="the question (quote it)")
    a.add_argument("--index", type=Path, default=None, help="index directory (local answering)")
    a.add_argument("--url", default=None, help="base URL of a running `hoprag serve` (instead of --index)")
    a.add_argument("--token", default=None, help="bearer token for --url (default: $HOPRAG_TOKEN)")
    a.add_argument(
        "--retriever",
        default=None,
        help="'dense', a GLM retriever / training run directory, or several joined by '+'; retrieve "
        "mode: default routed (docs/ppr.md); plan mode: adds the 'glm' traversal",
    )
    a.add_argument(
        "--mode",
        choices=["plan", "retrieve"],
        default="plan",
        help="plan: PAI-2 planner; retrieve: single-shot GLM-RAG (one retrieval, one LLM call; "
        "uses --retriever, else the shipped GLM fused with dense)",
    )
    a.add_argument("--top-k", type=int, default=5, help="documents returned")
    a.add_argument("--json", action="store_true", help="print one JSON object (answer, trace, cost)")
    add_config_args(a)
    a.set_defaults(handler=run_ask)


def run_ask(args: argparse.Namespace) -> int:
    if args.url:
        return _ask_url(args)
    if args.index is None:
        raise UserError("ask: give --index INDEX_DIR (answer locally) or --url URL (a running server)")
    from hoprag.config import load_config
    from hoprag.kg.store import KGIndexError
    from hoprag.planner.questions import PlannerInputError
    from hoprag.planner.report import format_answer
    from hoprag.qa.builder import build_qa_system, retriever_for
    from hoprag.qa.config import QASettings, QASystemConfig
    from hoprag.retrieval.loading import RetrieverSpecError

    settings = load_config(QASettings, args.config, args.overrides)
    config = QASystemConfig(
        **settings.model_dump(), index=str(args.index), mode=args.mode, retriever=args.retriever
    )
    retriever = retriever_for(config)
    if retriever is not None and not args.json:
        default = " (the default; --retriever chooses another)" if args.retriever is None else ""
        print(f"[ask] retriever: {retriever}{default}", file=sys.stderr, flush=True)
    try:
        result = build_qa_system(config).answer(args.question, top_k=args.top_k)
    except (KGIndexError, RetrieverSpecError, PlannerInputError, ValueError) as exc:
        raise UserError(str(exc)) from exc
    print(json.dumps(result.to_dict()) if args.json else format_answer(result))
    return 0


def _ask_url(args: argparse.Namespace) -> int:
    import os

    from serving.client import QAClient, QAClientError

    client = QAClient(args.url, token=args.token or os.environ.get("HOPRAG_TOKEN"))
    try:
        result = client.ask(args.question, mode=args.mode, top_k=args.top_k, trace=not args.json)
    except QAClientError as exc:
        raise UserError(str(exc)) from exc
    if args.json:
        print(json.dumps(result))
        return 0
    from hoprag.planner.report import format_answer
    from hoprag.planner.trace import answer_from_dict

    print(format_answer(answer_from_dict(result["trace"])))
    print("timings: " + ", ".join(f"{k} {v:.3f} s" for k, v in result["timings"].items()))
    return 0
