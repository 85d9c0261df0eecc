"""What one ``hoprag index`` build did: counts, failures, timings (printed and kept in the manifest)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

PARSE_FAILURE_STATUSES = ("no_triples", "unparseable", "empty_output")


@dataclass
class IndexSummary:
    """What a build did; printed at the end of ``hoprag index`` and stored in the manifest."""

    documents: int = 0
    extracted_now: int = 0
    reused_from_cache: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    dropped_triples: Counter[str] = field(default_factory=Counter)
    clean_triples: int = 0
    repaired_triples: int = 0
    input_problems: Counter[str] = field(default_factory=Counter)
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    extraction_seconds: float = 0.0
    entities: int = 0
    relations: int = 0
    triples: int = 0
    equivalent_edges: int = 0
    new_entities_embedded: int = 0
    theses: int = 0
    theses_merged: int = 0
    memory_graph_seconds: float = 0.0
    questions: int = 0
    questions_with_entities: int = 0
    link_sources: Counter[str] = field(default_factory=Counter)
    unknown_deletions: list[str] = field(default_factory=list)
    total_seconds: float = 0.0
    graph_source: str = ""  # the pre-built graph directory of a ``--graph`` build (no extraction)

    @property
    def docs_per_minute(self) -> float:
        return 60.0 * self.extracted_now / self.extraction_seconds if self.extraction_seconds else 0.0

    @property
    def parse_failures(self) -> int:
        return sum(self.statuses[s] for s in PARSE_FAILURE_STATUSES)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in self.__dict__.items():
            out[key] = dict(value) if isinstance(value, Counter) else value
        out["docs_per_minute"] = round(self.docs_per_minute, 2)
        out["parse_failures"] = self.parse_failures
        return out

    def render(self) -> str:
        fails = ", ".join(f"{k}={v}" for k, v in sorted(self.statuses.items()) if k != "ok") or "none"
        # "passage_*" entries count passages (no triples, unparseable, JSON repaired), not triples.
        passage_counts = [(k, v) for k, v in self.dropped_triples.most_common() if k.startswith("passage_")]
        drops = (
            ", ".join(
                f"{k}={v}" for k, v in self.dropped_triples.most_common() if not k.startswith("passage_")
            )
            or "none"
        )
        passages = ", ".join(f"{k.removeprefix('passage_')}={v}" for k, v in passage_counts) or "all parsed"
        problems = ", ".join(f"{k}={v}" for k, v in sorted(self.input_problems.items())) or "none"
        if self.graph_source:
            lines = [
                f"documents           {self.documents}",
                f"pre-built graph     {self.graph_source} (no LLM extraction)",
            ]
        else:
            lines = [
                f"documents           {self.documents} ({self.extracted_now} extracted now, "
                f"{self.reused_from_cache} from cache)",
                f"extraction          {self.extraction_seconds:.1f}s, {self.docs_per_minute:.1f} docs/min, "
                f"{self.llm_calls} LLM calls, {self.prompt_tokens}+{self.completion_tokens} tokens",
                f"document failures   {fails}",
                f"triples kept        {self.clean_triples} clean + {self.repaired_triples} repaired",
                f"triples dropped     {drops}",
                f"passage outputs     {passages}",
            ]
        lines += [
            f"input problems      {problems}",
            f"graph               {self.entities} entities, {self.relations} relations, {self.triples} triples "
            f"(incl. {self.equivalent_edges} equivalent edges; {self.new_entities_embedded} entities embedded now)",
            f"memory graph        {self.theses} theses ({self.theses_merged} statements merged by meaning), "
            f"{self.documents} episodes, {self.memory_graph_seconds:.1f}s",
            f"questions           {self.questions} ({self.questions_with_entities} linked to entities; "
            f"{', '.join(f'{k}={v}' for k, v in sorted(self.link_sources.items())) or 'no links'})",
            f"total               {self.total_seconds:.1f}s",
        ]
        if self.unknown_deletions:
            lines.append(f"not found (delete)  {', '.join(self.unknown_deletions)}")
        return "\n".join(lines)
