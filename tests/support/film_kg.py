"""The PAI-2 paper's plan-enhancement case as a small KG index (with a cycle Worms–Berlin–Germany
and a disconnected drug component), for planner and serving tests."""

from __future__ import annotations

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


def write_film_index(out: Path, embedder) -> Path:
    docs = [Document(t, ". ".join(" ".join(x) for x in ts) + ".") for t, ts in FILM_DOCS.items()]
    triples = [list(ts) for ts in FILM_DOCS.values()]
    tables = build_tables(docs, triples, [[] for _ in docs], embedder, SynonymConfig(enabled=False))
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
