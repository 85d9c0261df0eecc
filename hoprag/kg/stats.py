"""KG statistics (the paper's App. A table columns) via the networkx analysis view."""

from __future__ import annotations

from typing import Any

import numpy as np

from hoprag.kg.index import KGIndex
from hoprag.kg.tables import KIND_EXTRACTED
from hoprag.text import normalize_entity


def index_stats(index: KGIndex) -> dict[str, Any]:
    """Counts, degree/density/components and extraction/linking quality of one index."""
    import networkx as nx

    summary = index.manifest.get("summary", {})
    statuses = summary.get("statuses", {})
    n_docs = index.documents.num_rows
    docs_with_entities = len(np.unique(index.doc_entities.column("doc_id").to_numpy()))
    g = nx.Graph()
    g.add_nodes_from(range(index.num_entities))
    g.add_edges_from(zip(index.head.tolist(), index.tail.tolist(), strict=True))
    n = g.number_of_nodes()
    components = list(nx.connected_components(g)) if n else []
    largest = max((len(c) for c in components), default=0)
    questions = index.questions
    q_rows = questions.to_pylist() if questions is not None else []
    extracted = int((index.kind == KIND_EXTRACTED).sum())
    stats: dict[str, Any] = {
        "documents": n_docs,
        "entities": index.num_entities,
        "relations": len(index.relation_names),
        "triples": index.num_triples,
        "extracted_triples": extracted,
        "equivalent_edges": index.num_triples - extracted,
        "documents_with_entities": docs_with_entities,
        **_memory_graph_stats(index),
        "questions": len(q_rows),
        "questions_with_entities": sum(1 for q in q_rows if q["question_entities"]),
        "parse_failures": int(summary.get("parse_failures", 0)),
        "parse_failure_rate": round(summary.get("parse_failures", 0) / n_docs, 4) if n_docs else 0.0,
        "document_statuses": statuses,
        "dropped_triples": summary.get("dropped_triples", {}),
        "repaired_triples": summary.get("repaired_triples", 0),
        "mean_degree": round(2 * g.number_of_edges() / n, 3) if n else 0.0,
        "density": round(nx.density(g), 6) if n > 1 else 0.0,
        "components": len(components),
        "largest_component_pct": round(100.0 * largest / n, 2) if n else 0.0,
        "answer_in_supporting_entities_pct": _pct(q_rows),
        # yes/no answers (comparison questions) are never entities; this is the extraction recall
        "answer_in_supporting_entities_pct_entity_answers": _pct(
            [q for q in q_rows if normalize_entity(q["answer"]) not in ("yes", "no")]
        ),
        "llm_model_id": index.manifest.get("llm_model_id"),
        "embedder": index.manifest.get("embedder"),
    }
    return stats


def _memory_graph_stats(index: KGIndex) -> dict[str, Any]:
    """The memory graph's vertices and links (zero theses for an index built without them)."""
    theses = index.theses
    if theses is None:
        return {"theses": 0}
    linked_episodes = len(np.unique(theses.episodes.doc_ids)) if len(theses) else 0
    return {
        "theses": len(theses),
        "theses_merged_by_meaning": int(index.manifest.get("summary", {}).get("theses_merged", 0)),
        "thesis_object_links": theses.num_object_links,
        "thesis_episode_links": theses.num_episode_links,
        "episodes_with_theses": linked_episodes,
    }


def _pct(rows: list[dict[str, Any]]) -> float:
    return (
        round(100.0 * sum(1 for q in rows if q["answer_in_supporting_entities"]) / len(rows), 2)
        if rows
        else 0.0
    )


def render_stats(stats: dict[str, Any]) -> str:
    """Aligned ``key  value`` lines for terminals."""
    width = max(len(k) for k in stats)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in stats.items())
