"""The PAI-2 paper's plan-enhancement case as a small KG index (with a cycle Worms–Berlin–Germany
and a disconnected drug component), for planner and serving tests."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from hoprag.kg.store import write_snapshot
from hoprag.kg.tables import KGTables
from hoprag.linking.config import LinkingConfig
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


# The same questions with their entity spelled differently from the KG name (the generator's
# variant kinds): dictionary matching misses the first and the last; NER or the embedding must link them.
FILM_VARIANT_QUESTIONS = [
    (
        "who directed my cousin from warsaw?",
        "Carl Boese",
        ["My Cousin From Warsaw"],
        ["my cousin from warsaw"],
        1,
    ),
    ("Who is the spouse of Curtis-Bernhardt?", "Pearl Argyle", ["Curtis Bernhardt"], ["curtis bernhardt"], 1),
    ("which drug treats the kellan fever?", "Ostarizumab", ["Ostarizumab"], ["kellan fever"], 1),
]


FILM_NAMES = [
    "My Cousin From Warsaw",
    "Payment On Demand",
    "Curtis Bernhardt",
    "Carl Boese",
    "Kellan fever",
    "Worms",
]


def film_ner_answer(question: str) -> str:
    """What a good NER model answers for a film question: the KG names it mentions, however their
    case is spelled, as written in the question."""
    found = [m.group(0) for n in FILM_NAMES if (m := re.search(re.escape(n), question, re.IGNORECASE))]
    return "; ".join(found)


def film_questions(variants: bool = False) -> list[dict]:
    """Processed test questions over the film KG (hops in the metadata, like the synthetic generator);
    with ``variants`` also :data:`FILM_VARIANT_QUESTIONS`."""
    rows = []
    listed = FILM_QUESTIONS + (FILM_VARIANT_QUESTIONS if variants else [])
    for i, (q, a, docs, entities, hops) in enumerate(listed):
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
                "metadata": {
                    "hops": hops,
                    "domain": "film",
                    "spelling": "variant" if i >= len(FILM_QUESTIONS) else "exact",
                },
            }
        )
    return rows


def film_tables(
    embedder,
    questions: bool = False,
    ner_llm=None,
    variants: bool = False,
    extra_questions: Sequence[dict] = (),
) -> KGTables:
    """The film KG's tables (what :func:`write_film_index` writes; build once, write many); with
    ``questions`` also its processed test questions, linked as ``hoprag index`` links them:
    dictionary + embedding, and with ``ner_llm`` also that LLM's NER; then ``extra_questions``
    (processed rows, any split, links as given)."""
    from hoprag.linking.linker import normalize_question
    from indexing.extract import extract_question_mentions, ner_key
    from indexing.questions import link_questions, questions_table

    docs = [Document(t, ". ".join(" ".join(x) for x in ts) + ".") for t, ts in FILM_DOCS.items()]
    triples = [list(ts) for ts in FILM_DOCS.values()]
    tables = build_tables(docs, triples, [[] for _ in docs], embedder, SynonymConfig(enabled=False))
    if questions or extra_questions:
        rows = film_questions(variants) if questions else []
        mentions: list[list[str]] = [[] for _ in rows]
        if ner_llm is not None:
            texts = [normalize_question(r["question"]) for r in rows]
            keys = [ner_key(t, ner_llm.model_id) for t in texts]
            mentions = [r.entities for r in extract_question_mentions(ner_llm, keys, texts)]
        linked, _ = link_questions(
            rows,
            mentions,
            tables.entity_names,
            tables.entity_embeddings,
            {d.title: i for i, d in enumerate(docs)},
            {},
            embedder,
            _linking(ner_llm),
        )
        for row, links in zip(rows, linked, strict=True):
            row["question_entities"], row["link_sources"] = links["question_entities"], links["link_sources"]
        tables.questions = questions_table([*rows, *extra_questions])
    return tables


def _linking(ner_llm) -> LinkingConfig:
    return LinkingConfig(use_llm_ner=ner_llm is not None)


def write_film_index(
    out: Path,
    embedder,
    questions: bool = False,
    ner_llm=None,
    variants: bool = False,
    tables: KGTables | None = None,
    extra_questions: Sequence[dict] = (),
) -> Path:
    """The film KG as an index directory (:func:`film_tables`, or ``tables`` already built with the
    same ``ner_llm``), its manifest recording how the questions were linked (and with ``ner_llm``
    which LLM linked them, like an index built with that LLM)."""
    from hoprag.extraction.prompts import PROMPT_VERSION

    tables = (
        tables if tables is not None else film_tables(embedder, questions, ner_llm, variants, extra_questions)
    )
    manifest: dict = {
        "counts": {},
        "embedder": "packaged:all-MiniLM-L6-v2",
        "config": {"questions": _linking(ner_llm).model_dump(mode="json")},
    }
    if ner_llm is not None:
        manifest.update(llm_model_id=ner_llm.model_id, prompt_version=PROMPT_VERSION)
    write_snapshot(out, tables, manifest)
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
