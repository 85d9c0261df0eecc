"""The PAI-2 paper's plan-enhancement case as a small KG index (with a cycle Worms–Berlin–Germany
and a disconnected drug component), for planner and serving tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hoprag.kg.store import write_snapshot
from indexing.config import SynonymConfig
from indexing.corpus import Document
from indexing.graph import build_tables

FILM_DOCS = {
    "Payment On Demand": [
        ("Payment On Demand", "directed by", "Curtis Bernhardt"),
        ("Payment On Demand", "released in", "1951"),
    ],
    "My Cousin From Warsaw": [("My Cousin From Warsaw", "directed by", "Carl Boese")],
    "Curtis Bernhardt": [
        ("Curtis Bernhardt", "born in", "Worms"),
        ("Curtis Bernhardt", "spouse", "Pearl Argyle"),
    ],
    "Carl Boese": [("Carl Boese", "born in", "Berlin")],
    "Worms": [("Worms", "city in", "Germany"), ("Worms", "twinned with", "Berlin")],
    "Berlin": [("Berlin", "city in", "Germany")],
    "Ostarizumab": [("Ostarizumab", "treats", "Kellan fever")],  # a separate component
}


FILM_QUESTIONS = [
    (
        "Who directed My Cousin From Warsaw?",
        "Carl Boese",
        ["My Cousin From Warsaw"],
        ["my cousin from warsaw"],
        1,
    ),
    (
        "Where was the director of Payment On Demand born?",
        "Worms",
        ["Payment On Demand", "Curtis Bernhardt"],
        ["payment on demand"],
        2,
    ),
    (
        "In which country was the director of My Cousin From Warsaw born?",
        "Germany",
        ["My Cousin From Warsaw", "Carl Boese", "Berlin"],
        ["my cousin from warsaw"],
        3,
    ),
    ("Which drug treats Kellan fever?", "Ostarizumab", ["Ostarizumab"], ["kellan fever"], 1),
    ("Who is the spouse of Curtis Bernhardt?", "Pearl Argyle", ["Curtis Bernhardt"], ["curtis bernhardt"], 1),
    ("Where is Worms?", "Germany", ["Worms", "Atlantis"], ["worms"], 2),  # "Atlantis" is not in the corpus
]


def film_questions() -> list[dict]:
    """Processed test questions over the film KG (hops in the metadata, like the synthetic generator)."""
    rows = []
    for i, (q, a, docs, entities, hops) in enumerate(FILM_QUESTIONS):
        in_corpus = [d for d in docs if d in FILM_DOCS]
        gold_entities = sorted({x.lower() for d in in_corpus for t in FILM_DOCS[d] for x in (t[0], t[2])})
        rows.append(
            {
                "split": "test",
                "id": f"film-{i}",
                "question": q,
                "answer": a,
                "answer_aliases": [],
                "question_entities": entities,
                "link_sources": ["dictionary"],
                "supporting_facts": docs,
                "supporting_docs": in_corpus,
                "supporting_entities": gold_entities,
                "answer_in_supporting_entities": True,
                "metadata": {"hops": hops, "domain": "film"},
            }
        )
    return rows


def write_film_index(
    out: Path, embedder, questions: bool = False, extra_questions: Sequence[dict] = ()
) -> Path:
    """The film KG as an index directory; with ``questions`` also its processed test questions,
    followed by ``extra_questions`` (processed rows, any split)."""
    from indexing.questions import questions_table

    docs = [Document(t, ". ".join(" ".join(x) for x in ts) + ".") for t, ts in FILM_DOCS.items()]
    triples = [list(ts) for ts in FILM_DOCS.values()]
    tables = build_tables(docs, triples, [[] for _ in docs], embedder, SynonymConfig(enabled=False))
    if questions or extra_questions:
        tables.questions = questions_table([*(film_questions() if questions else []), *extra_questions])
    write_snapshot(out, tables, {"counts": {}, "embedder": "packaged:all-MiniLM-L6-v2"})
    return out


def write_tiny_glm(out: Path) -> Path:
    """An exported, untrained 1-layer GLM retriever (real weights and format; scores are arbitrary)."""
    import torch

    from hoprag.glm.backbone import BackboneConfig, build_backbone, load_tokenizer
    from hoprag.glm.encoder import GraphT5Encoder
    from hoprag.glm.model import GLMRetrieverModel
    from hoprag.glm.retriever import GLMSettings, save_retriever

    cfg = BackboneConfig(num_layers=1)
    torch.manual_seed(0)
    model = GLMRetrieverModel(GraphT5Encoder(build_backbone(cfg)), question_dim=384).eval()
    return save_retriever(out, model, load_tokenizer(cfg), GLMSettings())
