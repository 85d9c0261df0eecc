"""Which document ranker a run exports: the one its last validation scored best.

Validation (training/loop.py) ranks the held-out questions' documents with every ranker from one
forward pass and records ``val_recall@K/ranker=NAME/INDEX``. The exported retriever carries the
ranker with the best recall@2 (mean over the run's indexes), recall@5 breaking a tie, then the
configured ranker: the score ranker can beat idf by 0.3 recall@2 on one model and lose on another
(docs/glm.md §8), so no fixed choice suits every run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hoprag.retrieval.subgraph import DOC_RANKERS, DocRanker

_RANKER_KEY = "/ranker="


def ranker_metric(k: int, ranker: str) -> str:
    """The metric name of validation recall@k ranked by ``ranker`` (an index's name may follow)."""
    return f"val_recall@{k}{_RANKER_KEY}{ranker}"


def recall_by_ranker(record: Mapping[str, Any]) -> dict[DocRanker, dict[int, float]]:
    """``{ranker: {2: recall@2, 5: recall@5}}`` of one validation record, each the mean over the
    run's indexes (rankers the record does not score are absent)."""
    values: dict[tuple[str, int], list[float]] = {}
    for key, value in record.items():
        head, sep, rest = key.partition(_RANKER_KEY)
        if not sep or not head.startswith("val_recall@"):
            continue
        ranker = rest.split("/", 1)[0]
        values.setdefault((ranker, int(head.removeprefix("val_recall@"))), []).append(float(value))
    out: dict[DocRanker, dict[int, float]] = {}
    for ranker in DOC_RANKERS:
        ks = {k: float(np.mean(v)) for (name, k), v in values.items() if name == ranker}
        if ks:
            out[ranker] = ks
    return out


def best_ranker(record: Mapping[str, Any], configured: DocRanker) -> DocRanker:
    """The ranker to export: best validation recall@2, then recall@5, then ``configured``; the
    configured one where the record scores no ranker (a run without validation questions)."""
    scored = recall_by_ranker(record)
    if not scored:
        return configured
    return max(scored, key=lambda r: (scored[r].get(2, 0.0), scored[r].get(5, 0.0), r == configured))


def last_validation(path: Path) -> dict[str, Any]:
    """The last record of a run's ``validation.jsonl`` (the one its last checkpoint holds); ``{}``
    where the run never validated."""
    try:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except FileNotFoundError:
        return {}
    return json.loads(lines[-1]) if lines else {}
