"""Building a retriever from a spec: ``dense``, ``ppr``, ``routed``, a (GLM or GNN) retriever
directory, or several of those joined by ``+`` (their rankings fused, :mod:`hoprag.retrieval.fusion`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hoprag.embedding import EmbedderConfig, SentenceTransformerEmbedder
from hoprag.kg.index import KGIndex
from hoprag.retrieval.base import Retriever
from hoprag.retrieval.ppr_settings import PPRSettings
from hoprag.retrieval.subgraph import DocRanker, SubgraphRetrieverSettings


class RetrieverSpecError(ValueError):
    """A ``--retriever`` value that names no usable retriever."""


def index_embedder_id(index: KGIndex) -> str:
    """The embedder model the index's manifest names."""
    return str(index.manifest.get("embedder", EmbedderConfig().model))


def index_embedder(
    index: KGIndex, reuse: SentenceTransformerEmbedder | None = None
) -> SentenceTransformerEmbedder:
    """The embedder the index's manifest names (query vectors must come from the same model);
    ``reuse`` when it is that model already (a replica swapping to a new snapshot)."""
    if reuse is not None and reuse.model_id == index_embedder_id(index):
        return reuse
    return SentenceTransformerEmbedder(EmbedderConfig(model=index_embedder_id(index)))


FUSION_SEPARATOR = "+"
# Retrievers that need no directory: the dense baseline, HippoRAG 2's PPR (hoprag/retrieval/ppr.py)
# and the routed one (dense, fused with the packaged GLM and PPR where those agree:
# hoprag/retrieval/routing.py).
ROUTED = "routed"
BUILT_IN = ("dense", "ppr", ROUTED)


def retriever_spec_parts(spec: str) -> list[str]:
    """The retrievers a spec names: ``A+B`` → ``["A", "B"]`` (fused); anything else → ``[spec]``.

    A spec that is an existing path is one retriever even if its name holds a ``+``."""
    if FUSION_SEPARATOR not in spec or Path(spec).exists():
        return [spec]
    parts = [part.strip() for part in spec.split(FUSION_SEPARATOR)]
    if any(not part for part in parts):
        raise RetrieverSpecError(
            f"retriever {spec!r}: an empty name around '{FUSION_SEPARATOR}'; fuse retrievers as "
            f"'RUN_DIR{FUSION_SEPARATOR}dense'"
        )
    if len(set(parts)) != len(parts):
        raise RetrieverSpecError(f"retriever {spec!r}: names the same retriever twice")
    return parts


def check_retriever_spec(spec: str) -> None:
    """Refuse a spec that names no usable retriever, reading only metadata files (no model load):
    every part must be ``dense`` or a GLM / GNN retriever directory."""
    from hoprag.glm.artifact import RetrieverLoadError, read_retriever_meta

    for part in retriever_spec_parts(spec):
        if part in BUILT_IN:
            continue
        try:
            read_retriever_meta(Path(part), kind=None)
        except RetrieverLoadError as exc:
            raise RetrieverSpecError(
                f"retriever {part!r}: expected 'dense', 'ppr', 'routed' or a retriever directory; {exc}"
            ) from exc


def load_retriever(
    spec: str,
    index: KGIndex,
    embedder: SentenceTransformerEmbedder | None = None,
    ppr: PPRSettings | None = None,
) -> Retriever:
    """``dense`` → the dense baseline with the index's embedder; a path → an exported GLM or GNN
    retriever (``RUN_DIR/retriever`` or ``RUN_DIR`` itself), with the dense baseline as its fallback for
    questions without a linked entity; ``A+B`` → both, their rankings fused by reciprocal rank
    fusion (e.g. ``runs/glm+dense``); ``ppr`` → HippoRAG 2's PPR retriever with ``ppr``'s settings
    (default: the paper's); ``routed`` → dense, fused with the packaged GLM and PPR on the questions
    where those two agree (:class:`~hoprag.retrieval.routing.RoutedRetriever`). Pass ``embedder`` (from :func:`index_embedder`) to share an already
    loaded model."""
    embedder = embedder or index_embedder(index)
    parts = retriever_spec_parts(spec)
    if len(parts) > 1:
        from hoprag.retrieval.fusion import FusedRetriever

        return FusedRetriever([_load_one(part, index, embedder, ppr) for part in parts])
    return _load_one(spec, index, embedder, ppr)


def with_doc_ranker(retriever: Retriever, doc_ranker: DocRanker) -> Retriever:
    """``retriever`` ranking documents with ``doc_ranker`` (its GLM / GNN parts, fused ones too; the
    entity scores are the model's either way). Refuses a retriever without such a part."""
    parts = getattr(retriever, "retrievers", [retriever])  # fused and routed retrievers have parts
    subgraph = [r for r in parts if isinstance(getattr(r, "settings", None), SubgraphRetrieverSettings)]
    if not subgraph:
        raise RetrieverSpecError(
            f"a document ranker applies to GLM and GNN retrievers; {retriever.name!r} has none"
        )
    for r in subgraph:
        r.settings = r.settings.model_copy(update={"doc_ranker": doc_ranker})  # type: ignore[attr-defined]
    return retriever


def _load_one(
    spec: str, index: KGIndex, embedder: SentenceTransformerEmbedder, ppr: PPRSettings | None = None
) -> Retriever:
    from hoprag.retrieval.dense import DenseRetriever

    if spec == "dense":
        return DenseRetriever(index, embedder)
    if spec == "ppr":
        from hoprag.retrieval.ppr import PPRRetriever

        return PPRRetriever(index, embedder, ppr)
    if spec == ROUTED:
        from hoprag.glm.artifact import PACKAGED_GLM_NAME
        from hoprag.retrieval.routing import RoutedRetriever

        graph = [_load_one(PACKAGED_GLM_NAME, index, embedder), _load_one("ppr", index, embedder, ppr)]
        return RoutedRetriever(DenseRetriever(index, embedder), graph)
    from hoprag.glm.artifact import RetrieverLoadError, read_retriever_meta

    try:
        _, meta = read_retriever_meta(Path(spec), kind=None)
        if meta["kind"] == "gnn":
            return _gnn_retriever(spec, index, embedder)
        return _glm_retriever(spec, index, embedder)
    except RetrieverLoadError as exc:
        raise RetrieverSpecError(
            f"--retriever {spec!r}: expected 'dense', 'ppr', 'routed' or a retriever directory; {exc}"
        ) from exc


def _question_embedder(settings: Any, embedder: SentenceTransformerEmbedder) -> SentenceTransformerEmbedder:
    """The retriever's question embedder, sharing the index's when it is the same model."""
    if settings.question_embedder.model == embedder.model_id:
        return embedder
    return SentenceTransformerEmbedder(settings.question_embedder)


def _glm_retriever(spec: str, index: KGIndex, embedder: SentenceTransformerEmbedder) -> Retriever:
    from hoprag.glm.lora import merge_lora_updates
    from hoprag.glm.retriever import GLMRetriever, load_retriever_model
    from hoprag.retrieval.dense import DenseRetriever

    model, tokenizer, settings = load_retriever_model(Path(spec))
    merge_lora_updates(model)  # serving and evaluation only read it
    return GLMRetriever(
        index,
        model,
        tokenizer,
        settings,
        _question_embedder(settings, embedder),
        fallback=DenseRetriever(index, embedder),
        name=f"glm:{spec}",
    )


def _gnn_retriever(spec: str, index: KGIndex, embedder: SentenceTransformerEmbedder) -> Retriever:
    from hoprag.gnn.retriever import GNNRetriever, load_gnn_retriever_model
    from hoprag.retrieval.dense import DenseRetriever

    model, settings = load_gnn_retriever_model(Path(spec))
    return GNNRetriever(
        index,
        model,
        settings,
        _question_embedder(settings, embedder),
        fallback=DenseRetriever(index, embedder),
        name=f"gnn:{spec}",
    )
