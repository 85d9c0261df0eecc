"""Question preprocessing: link each question to KG entities and derive its supporting entities.

Mentions come from three sources, combined (see ARCHITECTURE.md §Indexing 7):
1. the LLM's NER answer, keeping only mentions that occur in the question (the embedded model
   sometimes "remembers" famous entities that are not there);
2. dictionary matching of KG entity names in the question (normalized n-grams, longest first,
   entity-like spans only, so generic words such as "film" do not link);
3. when both find nothing, the whole question embedded against entity names (GFM-RAG's fallback).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from hoprag.embedding import Embedder, top_k_cosine
from hoprag.text import dictionary_mentions, normalize_entity
from indexing.config import QuestionLinkingConfig


@dataclass
class LinkingStats:
    questions: int = 0
    with_entities: int = 0
    sources: Counter[str] = field(default_factory=Counter)
    missing_supporting_docs: int = 0


def link_questions(
    questions: Sequence[dict[str, Any]],
    llm_mentions: Sequence[list[str]],
    entity_names: list[str],
    entity_vectors: np.ndarray,
    title_to_doc: dict[str, int],
    doc_to_entities: dict[int, list[int]],
    embedder: Embedder,
    config: QuestionLinkingConfig,
) -> tuple[list[dict[str, Any]], LinkingStats]:
    """Processed questions (GFM-RAG fields) plus linking statistics."""
    lookup = {n: i for i, n in enumerate(entity_names)}
    stats = LinkingStats(questions=len(questions))
    # Embed all unmatched LLM mentions and all questions once, in two batched calls.
    unmatched = sorted({normalize_entity(m) for ms in llm_mentions for m in ms} - set(lookup))
    mention_link: dict[str, tuple[int, float]] = {}
    if unmatched and len(entity_names):
        idx, sims = top_k_cosine(embedder.encode(unmatched), entity_vectors, 1)
        mention_link = {m: (int(i[0]), float(s[0])) for m, i, s in zip(unmatched, idx, sims, strict=True)}
    out: list[dict[str, Any]] = []
    pending_fallback: list[int] = []
    for qi, (q, mentions) in enumerate(zip(questions, llm_mentions, strict=True)):
        linked: dict[int, str] = {}
        if config.use_llm_ner:
            for m in mentions:
                n = normalize_entity(m)
                if n in lookup:
                    linked.setdefault(lookup[n], "llm_exact")
                elif n in mention_link and mention_link[n][1] >= config.min_link_similarity:
                    linked.setdefault(mention_link[n][0], "llm_nearest")
        if config.use_dictionary:
            for n in dictionary_mentions(q["question"], lookup):
                linked.setdefault(lookup[n], "dictionary")
        supporting_docs = [t for t in q.get("supporting_facts", []) if t in title_to_doc]
        stats.missing_supporting_docs += len(q.get("supporting_facts", [])) - len(supporting_docs)
        sup_entities: list[int] = sorted(
            {e for t in supporting_docs for e in doc_to_entities.get(title_to_doc[t], [])}
        )
        if not linked:
            pending_fallback.append(qi)
        out.append(
            {
                "id": q["id"],
                "question": q["question"],
                "answer": q.get("answer", ""),
                "answer_aliases": q.get("answer_aliases", []),
                "supporting_docs": supporting_docs,
                "supporting_entities": [entity_names[e] for e in sup_entities],
                "_linked": linked,
            }
        )
    if pending_fallback and len(entity_names):
        q_vecs = embedder.encode([questions[i]["question"] for i in pending_fallback])
        idx, _ = top_k_cosine(q_vecs, entity_vectors, 1)
        for qi, best in zip(pending_fallback, idx, strict=True):
            out[qi]["_linked"][int(best[0])] = "question_embedding"
    for row in out:
        linked = row.pop("_linked")
        row["question_entities"] = [entity_names[e] for e in linked]
        row["link_sources"] = list(linked.values())
        stats.sources.update(linked.values())
        if linked:
            stats.with_entities += 1
        answer = normalize_entity(row["answer"])
        row["answer_in_supporting_entities"] = bool(answer) and answer in set(row["supporting_entities"])
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
            ("supporting_entities", pa.list_(pa.string())),
            ("answer_in_supporting_entities", pa.bool_()),
            ("metadata", pa.string()),
        ]
    )
    records = [{c: r.get(c) for c in cols} for r in rows]
    for rec in records:
        rec["metadata"] = json.dumps(rec["metadata"] or {}, sort_keys=True)
    return pa.Table.from_pylist(records, schema=schema)
