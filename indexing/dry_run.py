"""``hoprag index --dry-run``: what a build would index, read and validated, no model loaded.

The estimate counts the LLM calls a build makes (one OpenIE call per passage, two in two-step
mode, one NER call per question) and, where a rate was measured for the configured extractor,
the time at that rate (docs/llm-engines.md: the shipped student on 2 cores, 2Wiki paragraphs).
An existing index's extraction cache is not consulted: the estimate is for a build from scratch.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from indexing.config import IndexConfig
from indexing.corpus import Corpus
from indexing.extract import split_passages
from indexing.problems import SUMMARY_PROBLEMS

# LLM calls per minute of the default extractors, whole pipeline (Ray Data, one actor, 2 cores,
# the shipped student on the first 500 2Wiki corpus paragraphs; docs/llm-engines.md, 2026-12-07).
MEASURED_CALLS_PER_MINUTE = {"embedded": 111.8, "llamacpp:gemma-3-270m": 96.4}
# Problems a read counts without a place: they leave nothing out (bytes replaced, empty texts kept).
_UNLOCATED = ("non_utf8_file", "non_utf8_text", "empty_document")


@dataclass
class DryRun:
    """What a build of one input would do."""

    source: str
    format: str
    items: int
    documents: int
    questions: dict[str, int]
    passages: int
    llm_calls: int
    minutes: float | None  # at the measured rate of the configured extractor; None when unmeasured
    rate_basis: str
    problems: Counter[str] = field(default_factory=Counter)
    problem_locations: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "format": self.format,
            "items": self.items,
            "documents": self.documents,
            "questions": sum(self.questions.values()),
            "questions_by_split": self.questions,
            "passages": self.passages,
            "estimated_llm_calls": self.llm_calls,
            "estimated_minutes": None if self.minutes is None else round(self.minutes, 1),
            "rate_basis": self.rate_basis,
            "problems": dict(self.problems),
            "problem_locations": self.problem_locations,
        }

    def render(self) -> str:
        splits = ", ".join(f"{n} {split}" for split, n in sorted(self.questions.items())) or "none"
        lines = [
            f"dry run of {self.source} (read as {self.format}; no index written, no model loaded)",
            f"  items           {self.items}",
            f"  documents       {self.documents} ({self.passages} passages)",
            f"  questions       {sum(self.questions.values())} ({splits})",
            f"  LLM calls       {self.llm_calls} (estimated)",
            "  time            "
            + (
                f"~{self.minutes:.0f} min at {self.rate_basis}"
                if self.minutes is not None
                else self.rate_basis
            ),
        ]
        if self.problems:
            lines.append("  problems        " + ", ".join(f"{k}={v}" for k, v in self.problems.most_common()))
            lines += [f"    {where}" for where in self.problem_locations]
        return "\n".join(lines)


def _rate(config: IndexConfig) -> tuple[float | None, str]:
    llm = config.llm
    key = llm.backend if llm.backend != "llamacpp" else f"llamacpp:{llm.llamacpp.model}"
    if llm.backend == "reference":
        return None, "no LLM (reference extraction: seconds)"
    rate = MEASURED_CALLS_PER_MINUTE.get(key)
    if rate is None or config.extraction.concurrency != 1:
        return None, f"no measured rate for {key} with {config.extraction.concurrency} actor(s)"
    return rate, f"{rate} calls/min (shipped student, 2 cores, docs/llm-engines.md)"


def plan_build(corpus: Corpus, config: IndexConfig) -> DryRun:
    """The counts and estimate of indexing ``corpus`` with ``config`` from scratch."""
    ex = config.extraction
    passages = sum(
        min(len(split_passages(d.text, ex.max_chunk_chars)), ex.max_chunks_per_document)
        for d in corpus.documents
    )
    questions = {split: len(qs) for split, qs in corpus.questions.items() if qs}
    calls = passages * (2 if ex.mode == "two_step" else 1)
    if config.questions.use_llm_ner:
        calls += sum(questions.values())
    rate, basis = _rate(config)
    problems: Counter[str] = Counter(corpus.read.counts)  # the located ones, by kind
    problems.update({k: n for k, n in corpus.problems.items() if k in _UNLOCATED})
    return DryRun(
        source=corpus.source,
        format=corpus.format,
        items=corpus.read.items,
        documents=len(corpus.documents),
        questions=questions,
        passages=passages,
        llm_calls=calls,
        minutes=calls / rate if rate else None,
        rate_basis=basis,
        problems=problems,
        problem_locations=[str(p.where) for p in corpus.read.problems[:SUMMARY_PROBLEMS]],
    )
