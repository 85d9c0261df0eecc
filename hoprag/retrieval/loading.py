"""Building a retriever from a command-line spec: ``dense`` or a retriever directory."""

from __future__ import annotations

from pathlib import Path

from hoprag.embedding import EmbedderConfig, SentenceTransformerEmbedder
from hoprag.kg.index import KGIndex
from hoprag.retrieval.base import Retriever


class RetrieverSpecError(ValueError):
    """A ``--retriever`` value that names no usable retriever."""


def index_embedder(index: KGIndex) -> SentenceTransformerEmbedder:
    """The embedder the index's manifest names (query vectors must come from the same model)."""
    return SentenceTransformerEmbedder(
        EmbedderConfig(model=index.manifest.get("embedder", EmbedderConfig().model))
    )


def load_retriever(
    spec: str, index: KGIndex, embedder: SentenceTransformerEmbedder | None = None
) -> Retriever:
    """``dense`` → the dense baseline with the index's embedder; a path → an exported GLM retriever
    (``RUN_DIR/retriever`` or ``RUN_DIR`` itself), with the dense baseline as its fallback for
    questions without a linked entity. Pass ``embedder`` (from :func:`index_embedder`) to share
    an already loaded model."""
    from hoprag.retrieval.dense import DenseRetriever

    embedder = embedder or index_embedder(index)
    if spec == "dense":
        return DenseRetriever(index, embedder)
    from hoprag.glm.retriever import GLMRetriever, RetrieverLoadError, load_retriever_model

    try:
        model, tokenizer, settings = load_retriever_model(Path(spec))
    except RetrieverLoadError as exc:
        raise RetrieverSpecError(
            f"--retriever {spec!r}: expected 'dense' or a retriever directory; {exc}"
        ) from exc
    question_embedder = (
        embedder
        if settings.question_embedder.model == embedder.model_id
        else SentenceTransformerEmbedder(settings.question_embedder)
    )
    return GLMRetriever(
        index,
        model,
        tokenizer,
        settings,
        question_embedder,
        fallback=DenseRetriever(index, embedder),
        name=f"glm:{spec}",
    )
