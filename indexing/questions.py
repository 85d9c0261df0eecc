"""Question preprocessing: link each question to KG entities and derive its supporting entities.

The linking itself is :func:`hoprag.linking.link_mentions`, the function query-time linking
(serving, ``hoprag ask``, evaluation) runs too; the links stored here are a cache of that call.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from hoprag.embedding import Embedder
from hoprag.linking.config import LinkingConfig
from hoprag.linking.linker import EntityLinks, link_mentions, normalize_question
from hoprag.text import normalize_entity


@dataclass
class LinkingStats:
    questions: int = 0
    with_entities: int = 0
    sources: Counter[str] = field(default_factory=Counter)
    missing_supporting_docs: int = 0
    unknown_start_nodes: int = 0


# The link source of a seed taken from a question's ``start_nodes`` (GFM-RAG processed questions).
START_NODES = "start_nodes"


def start_node_entities(question: dict[str, Any], entity_index: dict[str, int]) -> tuple[list[str], int]:
    """The KG entities a question's ``start_nodes`` name (their ``entity`` part, normalized), in
    order and deduplicated, and how many named entities are not in the KG."""
    names = (question.get("start_nodes") or {}).get("entity") or []
    found: dict[str, None] = {}
    unknown = 0
    for name in names:
        norm = normalize_entity(name)
        if norm in entity_index:
            found.setdefault(norm)
        else:
            unknown += 1
    return list(found), unknown


def link_questions(
    questions: Sequence[dict[str, Any]],
    llm_mentions: Sequence[list[str]],
    entity_names: list[str],
    entity_vectors: np.ndarray,
    title_to_doc: dict[str, int],
    doc_to_entities: dict[int, list[int]],
    embedder: Embedder,
    config: LinkingConfig,
) -> tuple[list[dict[str, Any]], LinkingStats]:
    """Processed questions (GFM-RAG fields) plus linking statistics.

    A question that carries ``start_nodes`` (GFM-RAG processed questions) is seeded with the KG
    entities they name (link source ``start_nodes``); it is linked like any other question only
    when none of them is in the KG.
    """
    stats = LinkingStats(questions=len(questions))
    entity_index = {n: i for i, n in enumerate(entity_names)}
    links = link_mentions(
        [normalize_question(q["question"]) for q in questions],
        llm_mentions,
        entity_names,
        entity_vectors,
        embedder,
        config,
    )
    out: list[dict[str, Any]] = []
    for q, linked in zip(questions, links, strict=True):
        seeds, unknown = start_node_entities(q, entity_index)
        stats.unknown_start_nodes += unknown
        if seeds:
            linked = EntityLinks(tuple(seeds), (START_NODES,) * len(seeds))
        supporting_docs = [t for t in q.get("supporting_facts", []) if t in title_to_doc]
        stats.missing_supporting_docs += len(q.get("supporting_facts", [])) - len(supporting_docs)
        sup_entities: list[int] = sorted(
            {e for t in supporting_docs for e in doc_to_entities.get(title_to_doc[t], [])}
        )
        # A published benchmark's own paragraphs of the question (HotpotQA's distractor setting);
        # empty: every document of the index is a candidate (the pooled setting).
        candidates = [t for t in q.get("candidate_documents") or [] if t in title_to_doc]
        row: dict[str, Any] = {
            "id": q["id"],
            "question": q["question"],
            "answer": q.get("answer", ""),
            "answer_aliases": q.get("answer_aliases", []),
            "supporting_docs": supporting_docs,
            "candidate_docs": candidates,
            "supporting_entities": [entity_names[e] for e in sup_entities],
            "question_entities": list(linked.entities),
            "link_sources": list(linked.sources),
        }
        stats.sources.update(linked.sources)
        stats.with_entities += bool(linked.entities)
        answer = normalize_entity(row["answer"])
        row["answer_in_supporting_entities"] = bool(answer) and answer in set(row["supporting_entities"])
        out.append(row)
    return out, stats


def questions_table(rows: list[dict[str, Any]]) -> pa.Table:
    """Arrow table of processed questions (list columns for entities and documents)."""
    cols = [
        "split",
        "id",
        "question",
        "answer",
        "answer_aliases",
        "question_entities",
        "link_sources",
        "supporting_facts",
        "supporting_docs",
        "candidate_docs",
        "supporting_entities",
        "answer_in_supporting_entities",
        "metadata",
    ]
    schema = pa.schema(
        [
            ("split", pa.string()),
            ("id", pa.string()),
            ("question", pa.string()),
            ("answer", pa.string()),
            ("answer_aliases", pa.list_(pa.string())),
            ("question_entities", pa.list_(pa.string())),
            ("link_sources", pa.list_(pa.string())),
            ("supporting_facts", pa.list_(pa.string())),
            ("supporting_docs", pa.list_(pa.string())),
            ("candidate_docs", pa.list_(pa.string())),
            ("supporting_entities", pa.list_(pa.string())),
            ("answer_in_supporting_entities", pa.bool_()),
            ("metadata", pa.string()),
        ]
    )
    records = [{c: r.get(c) for c in cols} for r in rows]
    for rec in records:
        rec["metadata"] = json.dumps(rec["metadata"] or {}, sort_keys=True)
    return pa.Table.from_pylist(records, schema=schema)
