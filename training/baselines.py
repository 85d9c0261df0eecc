"""After ``hoprag train``: is the run better than what a user has without training?

On the run's own validation questions (held out of training, the seeded split of
:mod:`training.trainset`) the exported retriever is compared with dense retrieval, PPR, the GLM
shipped with hoprag as it is (``packaged-glm``, zero-shot), the default ``routed`` retriever and
the run fused with dense. A run that validates below one of them says so and names the better
retriever spec, so a user who reads only the last lines of the run serves the better choice. Validation sets are small (10% of the
training questions): the report prints their size, and it is a pointer, not a benchmark
(``hoprag eval retrieval`` on the test split is).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hoprag.glm.artifact import PACKAGED_GLM_NAME, RetrieverLoadError
from hoprag.retrieval.base import Retriever
from hoprag.retrieval.fusion import FusedRetriever
from hoprag.retrieval.loading import ROUTED, RetrieverSpecError, index_embedder, load_retriever
from hoprag.retrieval.routing import RoutedRetriever
from training.config import TrainConfig
from training.trainer import IndexArg, with_indexes
from training.trainset import TrainSet, inspect_sources, mean_recall, validation_queries

BASELINES_FILE = "baselines.json"
KS = (2, 5)


@dataclass
class RetrieverScore:
    """One retriever's validation recall (mean over the run's indexes with validation questions)."""

    label: str
    spec: str
    recall: dict[int, float]


@dataclass
class BaselineReport:
    """The run against dense, the shipped GLM zero-shot and the run fused with dense."""

    run: RetrieverScore
    others: list[RetrieverScore]
    n_questions: int
    skipped: list[str] = field(default_factory=list)

    @property
    def best(self) -> RetrieverScore:
        """The retriever with the best validation recall@2 (recall@5 breaks ties; the run wins a tie)."""
        candidates = [self.run, *self.others]
        return max(candidates, key=lambda s: (s.recall[2], s.recall[5], s is self.run))

    def render(self) -> str:
        """The closing lines of a run: the table, then the verdict."""
        if not self.n_questions:
            return "no validation questions (validation_fraction 0): the run was not compared with dense"
        lines = [f"\n== validation recall ({self.n_questions} held-out training questions) =="]
        for score in [*self.others, self.run]:
            lines.append(
                f"  {score.label:<40} recall@2 {score.recall[2]:.3f}  recall@5 {score.recall[5]:.3f}   ({score.spec})"
            )
        lines += [f"  not compared: {why}" for why in self.skipped]
        best = self.best
        if best is self.run:
            lines.append(f"this run validates best: serve it with --retriever {self.run.spec}")
        else:
            lines.append(
                f"this run validates below {best.label} (recall@2 {self.run.recall[2]:.3f} vs "
                f"{best.recall[2]:.3f}): serve --retriever {best.spec} instead"
                + (" (or train longer / on more questions)" if best.spec != "dense" else "")
            )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_questions": self.n_questions,
            "run": asdict(self.run),
            "others": [asdict(s) for s in self.others],
            "best": self.best.spec,
            "skipped": self.skipped,
        }


def compare_with_baselines(index_dir: IndexArg, out: Path, config: TrainConfig) -> BaselineReport:
    """Score the run exported to ``out`` and the baselines on the run's validation questions;
    writes ``out/baselines.json`` and returns the report."""
    config = with_indexes(config, index_dir)
    trainset = TrainSet(inspect_sources(config), config)
    run_spec, fused_spec = str(out), f"{out}+dense"
    entries = [
        ("dense (MiniLM sentence embeddings)", "dense"),
        ("HippoRAG 2's PPR (no training)", "ppr"),
        ("shipped GLM, zero-shot", PACKAGED_GLM_NAME),
        ("routed: dense, fused with the shipped GLM and PPR where they agree (the default)", ROUTED),
        ("this run + dense, fused (RRF)", fused_spec),
        ("this run", run_spec),
    ]
    recalls: dict[str, list[dict[int, float]]] = {spec: [] for _, spec in entries}
    skipped: dict[str, str] = {}
    n_questions = 0
    for index, rows in zip(trainset.indexes, trainset.val, strict=True):
        if not rows:
            continue
        n_questions += len(rows)
        embedder = index_embedder(index)
        # each model is loaded once per index; the fused and routed rows reuse the loaded parts
        loaded: dict[str, Retriever] = {}
        for spec in ("dense", "ppr", PACKAGED_GLM_NAME, run_spec):
            if spec in skipped:
                continue
            try:
                loaded[spec] = load_retriever(spec, index, embedder)
            except (RetrieverLoadError, RetrieverSpecError) as exc:
                skipped[spec] = f"{spec}: {exc}"
        if all(spec in loaded for spec in ("dense", PACKAGED_GLM_NAME, "ppr")):
            loaded[ROUTED] = RoutedRetriever(loaded["dense"], [loaded[PACKAGED_GLM_NAME], loaded["ppr"]])
        else:
            skipped[ROUTED] = f"{ROUTED}: needs dense, the shipped GLM and PPR"
        if run_spec in loaded and "dense" in loaded:
            loaded[fused_spec] = FusedRetriever([loaded[run_spec], loaded["dense"]])
        else:
            skipped[fused_spec] = f"{fused_spec}: needs both of its parts"
        for spec, retriever in loaded.items():
            recalls[spec].append(_recall(retriever, rows))
    scores = [RetrieverScore(label, spec, _mean(recalls[spec])) for label, spec in entries]
    run, others = scores[-1], [s for s in scores[:-1] if s.spec not in skipped]
    report = BaselineReport(run, others, n_questions, sorted(skipped.values()))
    (out / BASELINES_FILE).write_text(json.dumps(report.to_dict(), indent=2))
    return report


def _recall(retriever: Retriever, rows: Sequence[dict[str, Any]]) -> dict[int, float]:
    results = retriever.retrieve(validation_queries(rows), k=max(KS))
    return {k: mean_recall(rows, results, k) for k in KS}


def _mean(per_index: Sequence[dict[int, float]]) -> dict[int, float]:
    return {k: float(np.mean([m[k] for m in per_index])) if per_index else float("nan") for k in KS}
