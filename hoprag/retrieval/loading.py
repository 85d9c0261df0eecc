"""Building a retriever from a command-line spec: ``dense`` or a retriever directory."""

from __future__ import annotations

from pathlib import Path

from hoprag.embedding import EmbedderConfig, SentenceTransformerEmbedder
from hoprag.kg.index import KGIndex
from hoprag.retrieval.base import Retriever


class RetrieverSpecError(ValueError):
    """A ``--retriever`` value that names no usable retriever."""


def load_retriever(spec: str, index: KGIndex) -> Retriever:
    """``dense`` → the dense baseline with the index's embedder; a path → an exported GLM retriever
    (``RUN_DIR/retriever`` or ``RUN_DIR`` itself), with the dense baseline as its fallback for
    questions without a linked entity."""
    from hoprag.retrieval.dense import DenseRetriever

    embedder = SentenceTransformerEmbedder(
        EmbedderConfig(model=index.manifest.get("embedder", EmbedderConfig().model))
    )
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
