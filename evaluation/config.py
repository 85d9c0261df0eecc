"""Typed config of a batch evaluation: which benchmarks, which systems, where results go."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, model_validator

from evaluation.judge import JudgeConfig
from hoprag.config import StrictModel
from hoprag.llm.factory import LLMBackendConfig
from hoprag.planner.config import PlannerConfig
from hoprag.qa.config import ANSWERING_LLM_HELP, QASettings, RetrieveModeSettings, answering_llm
from hoprag.ray_runtime import RayConfig
from hoprag.retrieval.base import DEFAULT_RETRIEVER
from hoprag.retrieval.ppr_settings import PPRSettings

REGISTRY = Path(__file__).parent / "registry.yaml"
_NAME = re.compile(r"^[\w.-]+$")


# Where the index of a GFM-RAG-layout dataset directory lives by default (GFM-RAG keeps what it
# derives from a dataset under DATA/processed/ too).
GFM_RAG_INDEX = Path("processed") / "hoprag-index"


def is_gfm_rag_dir(path: Path) -> bool:
    """A GFM-RAG-layout dataset directory: ``raw/documents.json`` or ``raw/dataset_corpus.json``,
    or a pre-built ``processed/stage1/nodes.csv``, and not itself an index."""
    return not (path / "manifest.json").exists() and any(
        (path / rel).is_file()
        for rel in ("raw/documents.json", "raw/dataset_corpus.json", "processed/stage1/nodes.csv")
    )


def gfm_rag_index_command(data: Path, index: Path) -> str:
    """The command that builds ``index`` from the GFM-RAG-layout directory ``data``: from its
    pre-built graph when it has one (no LLM), else from its raw documents."""
    if (data / "processed" / "stage1" / "nodes.csv").is_file():
        return f"hoprag index --graph {data / 'processed' / 'stage1'} --out {index}"
    return f"hoprag index --corpus {data} --out {index}"


class BenchmarkSpec(StrictModel):
    """A KG index with processed questions (build one with ``hoprag index`` from any raw format),
    named directly or through the GFM-RAG-layout dataset directory it is built from."""

    name: str = Field(description="Short name used in reports (letters, digits, '-', '_', '.').")
    index: Path = Field(description="Index directory (default with `data`: DATA/processed/hoprag-index).")
    data: Path | None = Field(
        default=None,
        description="A GFM-RAG-layout dataset directory (raw/documents.json and/or "
        "processed/stage1/) the index is built from, e.g. GFM-RAG's data/hotpotqa_test.",
    )
    split: str = Field(default="test", description="Question split to evaluate.")
    limit: int | None = Field(default=None, ge=1, description="Evaluate only the first N questions.")
    where: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Keep questions whose metadata field has one of these values, e.g. {domain: [biomedical]} "
        "for a held-out-domain benchmark from the synthetic generator.",
    )

    @model_validator(mode="before")
    @classmethod
    def _default_index(cls, values: object) -> object:
        if isinstance(values, dict) and values.get("index") is None and values.get("data") is not None:
            return {**values, "index": Path(values["data"]) / GFM_RAG_INDEX}
        return values

    @model_validator(mode="after")
    def _check_name(self) -> BenchmarkSpec:
        if not _NAME.match(self.name):
            raise ValueError(f"benchmark name {self.name!r} may only hold letters, digits, '-', '_', '.'")
        return self


class SystemSpec(StrictModel):
    """A system under test: a retriever alone, or a QA pipeline."""

    name: str
    kind: Literal["retrieval", "qa"]
    retriever: str | None = Field(
        default=None,
        description="'dense', a GLM / GNN retriever (or run) directory, or several joined by '+' (rankings "
        "fused, e.g. 'runs/glm+dense'); retrieval systems, rag, plan.",
    )
    pipeline: Literal["no_context", "rag", "plan"] | None = Field(
        default=None, description="QA systems: no_context (LLM alone), rag (single-shot), plan (PAI-2)."
    )
    planner: PlannerConfig | None = Field(
        default=None,
        description="Plan systems: this system's planner settings, in place of the run's `planner` (e.g. "
        "an ablation beside the default: {theses: 0}).",
    )

    @model_validator(mode="after")
    def _consistent(self) -> SystemSpec:
        if not _NAME.match(self.name):
            raise ValueError(f"system name {self.name!r} may only hold letters, digits, '-', '_', '.'")
        if self.kind == "retrieval" and not self.retriever:
            raise ValueError(f"system {self.name}: a retrieval system needs 'retriever'")
        if self.kind == "qa" and self.pipeline is None:
            raise ValueError(f"system {self.name}: a QA system needs 'pipeline'")
        if self.pipeline == "rag" and not self.retriever:
            raise ValueError(f"system {self.name}: pipeline 'rag' needs 'retriever'")
        if self.planner is not None and self.pipeline != "plan":
            raise ValueError(f"system {self.name}: 'planner' settings apply to pipeline 'plan' only")
        return self


class EvalConfig(StrictModel):
    """``hoprag eval run --config FILE``: benchmarks × systems, one Ray Data job per pair."""

    benchmarks: list[BenchmarkSpec] = Field(min_length=1)
    systems: list[SystemSpec] = Field(min_length=1)
    out: Path = Field(
        description="Evaluation directory (per-question results, summary.json, report.md, plots)."
    )
    llm: LLMBackendConfig = Field(default_factory=answering_llm, description=ANSWERING_LLM_HELP)
    planner: PlannerConfig = Field(default_factory=PlannerConfig)
    retrieve: RetrieveModeSettings = Field(
        default_factory=RetrieveModeSettings, description="Single-shot GLM-RAG settings (rag systems)."
    )
    ppr: PPRSettings = Field(
        default_factory=PPRSettings,
        description="HippoRAG 2's PPR retriever, for systems whose retriever names 'ppr'.",
    )
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    ks: list[int] = Field(default_factory=lambda: [1, 2, 5, 10], description="Document recall cut-offs.")
    retrieval_actors: int = Field(default=2, ge=1, description="Actor pool size for retrieval systems.")
    qa_actors: int = Field(
        default=1, ge=1, description="Actor pool size for QA systems (each loads the LLM)."
    )
    batch_size: int = Field(default=8, ge=1, description="Questions per actor batch.")
    cpus_per_actor: float = Field(default=1.0, gt=0)
    bootstrap_resamples: int = Field(default=1000, ge=100)
    seed: int = 0
    ray: RayConfig = Field(default_factory=RayConfig)

    def qa_settings(self, system: SystemSpec | None = None) -> QASettings:
        """The QA settings a system is built with (as ``hoprag ask`` and the QA app take them): the
        run's, with the system's own planner settings where it has them."""
        return QASettings(
            llm=self.llm, planner=self.planner_for(system), retrieve=self.retrieve, ppr=self.ppr
        )

    def planner_for(self, system: SystemSpec | None) -> PlannerConfig:
        """The planner settings of ``system``: its own, else the run's."""
        return system.planner if system is not None and system.planner is not None else self.planner

    @model_validator(mode="after")
    def _unique(self) -> EvalConfig:
        for what, names in (
            ("benchmark", [b.name for b in self.benchmarks]),
            ("system", [s.name for s in self.systems]),
        ):
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise ValueError(f"duplicate {what} names: {', '.join(dupes)}")
        return self


def resolve_benchmark(name_or_path: str, registry: Path = REGISTRY) -> BenchmarkSpec:
    """A benchmark by registry name (``evaluation/registry.yaml``), by index path, or by the path
    of a GFM-RAG-layout dataset directory (its index: DATA/processed/hoprag-index)."""
    path = Path(name_or_path)
    if path.exists() and is_gfm_rag_dir(path):
        return BenchmarkSpec(name=path.resolve().name, data=path)
    if path.exists():
        return BenchmarkSpec(name=path.name if path.name != "index" else path.parent.name, index=path)
    entries = yaml.safe_load(registry.read_text()) if registry.is_file() else {}
    entry = (entries or {}).get("benchmarks", {}).get(name_or_path)
    if entry is None:
        known = ", ".join(sorted((entries or {}).get("benchmarks", {}))) or "none"
        raise ValueError(
            f"benchmark {name_or_path!r} is neither an index directory nor in {registry} (known: {known})"
        )
    return BenchmarkSpec(name=name_or_path, **entry)


def default_systems(retriever: str | None) -> list[SystemSpec]:
    """The systems ``hoprag eval run --index ... [--retriever SPEC]`` evaluates: dense and the GLM
    (``retriever``, default :data:`~hoprag.retrieval.base.DEFAULT_RETRIEVER`) alone and as RAG, and
    the LLM without context."""
    retriever = retriever or DEFAULT_RETRIEVER
    return [
        SystemSpec(name="dense", kind="retrieval", retriever="dense"),
        SystemSpec(name="glm", kind="retrieval", retriever=retriever),
        SystemSpec(name="no-context", kind="qa", pipeline="no_context"),
        SystemSpec(name="dense-rag", kind="qa", pipeline="rag", retriever="dense"),
        SystemSpec(name="glm-rag", kind="qa", pipeline="rag", retriever=retriever),
    ]
