"""``hoprag bench grammar``: what building the constrained-decoding engine's view of a tokenizer
costs, hoprag's (:mod:`hoprag.llm.tokenizer_view`, token bytes read from the vocabulary) against
``llguidance.hf.from_tokenizer`` (Rust re-parses the serialized tokenizer), taking turns in one
process on the embedded model's tokenizer (or ``--model-path``'s). Every process that decodes with a
grammar pays this once: Ray Data actors, Serve replicas, test workers. The two views are compared
token by token (bytes and special flags) so a speed-up never hides a different view.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.harness import publish


def differing_tokens(ours: Any, theirs: Any, size: int) -> list[int]:
    """The token ids (below ``size``) whose bytes or special flag differ between two llguidance
    tokenizer views."""
    return [
        i
        for i in range(size)
        if ours.decode_bytes([i]) != theirs.decode_bytes([i])
        or ours.is_special_token(i) != theirs.is_special_token(i)
    ]


def measure_views(tokenizer: Any, repeats: int) -> dict[str, Any]:
    """Seconds per build of each view (``repeats`` turns each, alternating) and whether they agree."""
    import llguidance.hf

    from hoprag.llm.tokenizer_view import token_bytes, tokenizer_view

    size = len(tokenizer)
    builders = {
        "hoprag tokenizer_view": lambda: tokenizer_view(tokenizer, size),
        "llguidance.hf.from_tokenizer": lambda: llguidance.hf.from_tokenizer(tokenizer, n_vocab=size),
    }
    seconds: dict[str, list[float]] = {name: [] for name in builders}
    views: dict[str, Any] = {}
    for _ in range(repeats):
        for name, build in builders.items():
            started = time.perf_counter()
            views[name] = build()
            seconds[name].append(time.perf_counter() - started)
    differing = differing_tokens(*views.values(), size)
    return {
        "vocabulary": size,
        "read_from_vocabulary": token_bytes(tokenizer) is not None,
        "differing_tokens": len(differing),
        "builds": [
            {
                "view": name,
                "seconds": [round(s, 2) for s in runs],
                "median_s": round(statistics.median(runs), 2),
            }
            for name, runs in seconds.items()
        ],
    }


def _table(report: dict[str, Any]) -> Iterable[str]:
    yield f"vocabulary {report['vocabulary']:,}; tokens whose view differs: {report['differing_tokens']}"
    for row in report["builds"]:
        yield f"  {row['view']:<32} median {row['median_s']:>6.2f} s  runs {row['seconds']}"


def run_grammar_benchmark(args: argparse.Namespace) -> int:
    """Entry point of ``hoprag bench grammar``."""
    from transformers import AutoTokenizer

    from hoprag.llm.embedded import ensure_converted_checkpoint

    path = args.model_path or ensure_converted_checkpoint()
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    result = {"tokenizer": str(path), **measure_views(tokenizer, args.repeats)}
    publish("grammar", result, args, table=_table)
    return 0 if result["differing_tokens"] == 0 else 1


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model-path",
        type=Path,
        default=None,
        help="a Hugging Face checkpoint directory whose tokenizer to use (default: the embedded model's)",
    )
    p.add_argument("--repeats", type=int, default=3, help="builds of each view, taking turns")
    p.add_argument("--json", action="store_true", help="one line of JSON")
