"""``hoprag eval ceiling``: the best the GLM retriever's subgraph sampler and document ranker allow.

No model is involved; for each question of a split, with a retriever's settings (sampler, ranker):

- **coverage**: the question's subgraph is sampled around its linked entities exactly as the GLM
  retriever and the trainer sample it (:func:`hoprag.glm.sampler.sample_subgraph`); of its
  supporting entities that are in the KG, the share inside that subgraph. Only those can be scored,
  and only those are training labels (:func:`hoprag.glm.data.build_example` counts the rest as
  ``positives_outside_subgraph``).
- **oracle recall@k**: the subgraph's entities scored by an oracle (supporting entities logit
  ``+ORACLE_LOGIT``, every other entity ``-ORACLE_LOGIT``: probability 1 and 0 to the ranker) and
  ranked into documents by the retriever's own ranker (:meth:`GLMSettings.rank_documents`); document
  recall@k against the gold documents, as ``hoprag eval retrieval`` scores the GLM.

Questions without a linked entity in the KG get no subgraph (the GLM retriever answers them with
its dense fallback); they are counted (``unseeded``) and left out of both figures. The questions
themselves are :func:`evaluation.questions.select_questions`'s, as in every other evaluation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evaluation.questions import question_seeds, select_questions
from hoprag.glm.sampler import sample_subgraph
from hoprag.glm.settings import GLMSettings
from hoprag.kg.index import KGIndex
from hoprag.retrieval.metrics import recall_at_k

# sigmoid(10) = 0.99995: the score-weighted ranker sees probabilities 1 and 0 (a larger logit
# changes nothing; an infinite one would make the ranker's score sums undefined).
ORACLE_LOGIT = 10.0


def oracle_logits(entity_ids: Sequence[int], supporting: set[int]) -> list[float]:
    """The oracle entity scorer: ``+ORACLE_LOGIT`` for supporting entities, ``-ORACLE_LOGIT`` otherwise."""
    return [ORACLE_LOGIT if e in supporting else -ORACLE_LOGIT for e in entity_ids]


def question_ceiling(
    index: KGIndex,
    row: dict[str, Any],
    settings: GLMSettings,
    titles: Sequence[str],
    ks: Sequence[int] = (2, 5),
) -> dict[str, Any]:
    """One question's figures: ``seeded``, supporting entities in the KG / inside the subgraph /
    not in the KG, and (seeded questions with gold documents) the oracle's recall@k. ``titles``:
    the index's document titles by id."""
    supporting = {index.entity_id(e) for e in row.get("supporting_entities") or []}
    in_kg = {e for e in supporting if e is not None}
    out: dict[str, Any] = {
        "seeded": False,
        "supporting": len(in_kg),
        "inside": 0,
        "triples": 0,
        "not_in_kg": len({e for e in row.get("supporting_entities") or [] if index.entity_id(e) is None}),
        "recall": {},
    }
    seeds = question_seeds(index, row)
    if not seeds:
        return out
    sub = sample_subgraph(index.adjacency, seeds, settings.sampler)
    entity_ids = sub.entity_ids
    out["seeded"] = True
    out["inside"] = len(in_kg & set(entity_ids))
    out["triples"] = len(sub.triple_ids)
    gold = list(row.get("supporting_docs") or [])
    if gold:
        ranked = settings.rank_documents(
            entity_ids, oracle_logits(entity_ids, in_kg), index.entity_documents, max(ks)
        )
        retrieved = [titles[d] for d, _ in ranked]
        out["recall"] = {f"recall@{k}": recall_at_k(retrieved, gold, k) for k in ks}
    return out


def summarize(per_question: Sequence[dict[str, Any]], ks: Sequence[int]) -> dict[str, Any]:
    """Coverage and oracle recall over the seeded questions of ``per_question``."""
    seeded = [q for q in per_question if q["seeded"]]
    supporting = sum(q["supporting"] for q in seeded)
    inside = sum(q["inside"] for q in seeded)
    with_support = [q["inside"] / q["supporting"] for q in seeded if q["supporting"]]
    scored = [q["recall"] for q in seeded if q["recall"]]
    return {
        "questions": len(per_question),
        "unseeded": len(per_question) - len(seeded),
        "mean_triples": round(sum(q["triples"] for q in seeded) / len(seeded), 1) if seeded else None,
        "supporting_entities": supporting,
        "supporting_not_in_kg": sum(q["not_in_kg"] for q in seeded),
        "in_subgraph": round(inside / supporting, 4) if supporting else None,
        "in_subgraph_per_question": round(sum(with_support) / len(with_support), 4) if with_support else None,
        "n": len(scored),
        **{
            f"oracle_recall@{k}": round(sum(r[f"recall@{k}"] for r in scored) / len(scored), 4)
            if scored
            else None
            for k in ks
        },
    }


def measure_ceiling(
    index: KGIndex,
    settings: GLMSettings,
    split: str = "test",
    ks: Sequence[int] = (2, 5),
    group_by: str | None = None,
) -> dict[str, Any]:
    """The split's coverage and oracle recall@k with ``settings`` (see the module docstring); with
    ``group_by`` (a question metadata field: domain, type, hops) also per value in ``groups``."""
    rows, _ = select_questions(index, split)
    titles = index.document_titles
    per_question = [question_ceiling(index, row, settings, titles, ks) for row in rows]
    out: dict[str, Any] = {
        "split": split,
        "sampler": settings.sampler.model_dump(),
        "doc_ranker": settings.doc_ranker,
        "top_entities": settings.top_entities,
        **summarize(per_question, ks),
    }
    if group_by:
        groups: dict[str, list[dict[str, Any]]] = {}
        for row, q in zip(rows, per_question, strict=True):
            groups.setdefault(str(row["meta"].get(group_by)), []).append(q)
        out["groups"] = {value: summarize(qs, ks) for value, qs in sorted(groups.items())}
    return out


def format_ceiling(result: dict[str, Any], ks: Sequence[int] = (2, 5)) -> list[str]:
    """A small table for one :func:`measure_ceiling` result (a row per group with ``group_by``)."""
    s = result["sampler"]

    def cell(value: float | None, spec: str = ".3f") -> str:
        return "-" if value is None else format(value, spec)

    header = ["", "questions", "unseeded", "triples", "in subgraph", *[f"oracle @{k}" for k in ks]]
    rows = [
        [
            label,
            str(r["questions"]),
            str(r["unseeded"]),
            cell(r["mean_triples"], ".1f"),
            f"{cell(r['in_subgraph'])} of {r['supporting_entities']}",
            *[cell(r[f"oracle_recall@{k}"]) for k in ks],
        ]
        for label, r in [("all", result), *(result.get("groups") or {}).items()]
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return [
        f"split {result['split']}: sampler max_hops {s['max_hops']}, max_triplets {s['max_triplets']}, "
        f"seed {s['seed']}; ranker {result['doc_ranker']}, top {result['top_entities']} entities",
        *(
            "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for row in [header, *rows]
        ),
    ]
