"""Building a retriever from a command-line spec: ``dense`` or a retriever directory."""

from __future__ import annotations

from pathlib import Path

from hoprag.embedding import EmbedderConfig, SentenceTransformerEmbedder
from hoprag.kg.index import KGIndex
from hoprag.retrieval.base import Retriever

RETRIEVER_CONFIG = "retriever.json"


class RetrieverSpecError(ValueError):
    """A ``--retriever`` value that names no retriever."""


def load_retriever(spec: str, index: KGIndex) -> Retriever:
    """``dense`` → the dense baseline with the index's embedder; a path → an exported retriever
    directory (``RUN_DIR/retriever`` or ``RUN_DIR`` itself)."""
    if spec == "dense":
        from hoprag.retrieval.dense import DenseRetriever

        embedder = SentenceTransformerEmbedder(
            EmbedderConfig(model=index.manifest.get("embedder", EmbedderConfig().model))
        )
        return DenseRetriever(index, embedder)
    path = Path(spec)
    for candidate in (path, path / "retriever"):
        if (candidate / RETRIEVER_CONFIG).is_file():
            raise RetrieverSpecError(
                f"{candidate} is a trained retriever, but this hoprag cannot load trained retrievers yet"
            )
    raise RetrieverSpecError(
        f"--retriever {spec!r}: expected 'dense' or a retriever directory containing {RETRIEVER_CONFIG} "
        f"(or a training run directory with retriever/{RETRIEVER_CONFIG})"
    )
