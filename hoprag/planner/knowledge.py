"""The planner's view of a KG index: triple texts and vectors, vertex matching, fused triple search.

Triple vectors (the index's embedder over ``"head relation tail"``) are part of the snapshot
(``triple_embeddings.npy``, memory-mapped, searched through the index's
:meth:`~hoprag.kg.index.KGIndex.vector_search`). For an index built before that, they are computed
on first use and cached under ``$HOPRAG_CACHE_DIR/triple-vectors/``, keyed by the index snapshot
and the embedder, and searched exactly.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from hoprag.atomic import atomic_file
from hoprag.embedding import Embedder
from hoprag.kg.index import KGIndex
from hoprag.kg.tables import KIND_EQUIVALENT, triple_text
from hoprag.paths import cache_dir
from hoprag.planner.search import BM25, top_indices
from hoprag.retrieval.fusion import weighted_rrf
from hoprag.text import normalize_entity
from hoprag.vectorsearch import ExactSearch, VectorSearch

logger = logging.getLogger(__name__)


def triple_vector_cache_path(index: KGIndex, model_id: str) -> Path:
    """Where the triple vectors of an index without ``triple_embeddings.npy`` are cached."""
    key = hashlib.sha256(
        f"{index.path.resolve()}|{index.manifest['snapshot']}|{model_id}".encode()
    ).hexdigest()
    return cache_dir() / "triple-vectors" / f"{key[:24]}.npy"


@dataclass(frozen=True)
class VertexMatch:
    """A KG entity matched to a mention, with its fused score and how it matched."""

    entity_id: int
    name: str
    score: float
    exact: bool


class KnowledgeGraphView:
    """Entity and triple search over one :class:`~hoprag.kg.index.KGIndex` (read-only, thread-safe)."""

    def __init__(self, index: KGIndex, embedder: Embedder) -> None:
        self.index = index
        self.embedder = embedder

    # -- texts -------------------------------------------------------------------------------
    def entity_text(self, entity_id: int) -> str:
        return self.index.entity_surface[entity_id] or self.index.entity_names[entity_id]

    def triple_parts(self, triple_id: int) -> tuple[str, str, str]:
        """(head, relation, tail) with entities in their surface spelling."""
        i = self.index
        return (
            self.entity_text(int(i.head[triple_id])),
            i.relation_names[int(i.relation[triple_id])],
            self.entity_text(int(i.tail[triple_id])),
        )

    def triple_text(self, triple_id: int) -> str:
        return triple_text(*self.triple_parts(triple_id))

    @cached_property
    def fact_triples(self) -> np.ndarray:
        """Ids of extracted triples (``equivalent`` synonym edges are walked, never shown as facts)."""
        return np.flatnonzero(self.index.kind != KIND_EQUIVALENT)

    def is_fact(self, triple_id: int) -> bool:
        return bool(self.index.kind[triple_id] != KIND_EQUIVALENT)

    # -- lexical indexes ---------------------------------------------------------------------
    @cached_property
    def entity_bm25(self) -> BM25:
        return BM25(self.index.entity_names)

    @cached_property
    def triple_bm25(self) -> BM25:
        return BM25([self.triple_text(t) for t in range(self.index.num_triples)])

    # -- dense vectors -----------------------------------------------------------------------
    @cached_property
    def triple_vectors(self) -> np.ndarray:
        """L2-normalized vectors of every triple's text: the snapshot's (memory-mapped), or for an
        index without them computed once, then read from the cache."""
        stored = self.index.triple_embeddings
        if stored is not None:
            return stored
        logger.info(
            "%s has no triple_embeddings.npy (built before they were part of the index): using the "
            "triple-vector cache, searched exactly; rebuild the index to have them stored and searched "
            "through its ANN index",
            self.index.path,
        )
        path = triple_vector_cache_path(self.index, self.embedder.model_id)
        if path.is_file():
            vectors = np.load(path)
            if vectors.shape == (self.index.num_triples, self.embedder.dim):
                return vectors
        logger.info("embedding %d triples of %s (cached afterwards)", self.index.num_triples, self.index.path)
        vectors = self.embedder.encode([self.triple_text(t) for t in range(self.index.num_triples)])
        vectors = np.asarray(vectors, dtype=np.float32).reshape(self.index.num_triples, self.embedder.dim)
        with atomic_file(path, "wb") as fh:
            np.save(fh, vectors)
        return vectors

    @cached_property
    def triple_search(self) -> VectorSearch:
        """Search over :attr:`triple_vectors` (the index's ANN index where it has one)."""
        found = self.index.vector_search("triple")
        return found if found is not None else ExactSearch(self.triple_vectors)

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.embedder.encode(texts), dtype=np.float32)

    # -- matching and search -----------------------------------------------------------------
    def match_vertices(
        self,
        mention: str,
        k: int = 3,
        fetch: int = 15,
        weights: tuple[float, float] = (0.5, 0.5),
        min_similarity: float = 0.5,
        mention_vector: np.ndarray | None = None,
    ) -> list[VertexMatch]:
        """Up to ``k`` entities for a mention: dense and BM25 rankings fused by weighted RRF.

        An entity whose normalized name equals the mention wins alone (PAI-2 keeps only exact
        matches when there is one). Dense candidates below ``min_similarity`` are not considered.
        """
        exact = self.index.entity_id(mention)
        if exact is not None:
            return [VertexMatch(exact, self.index.entity_names[exact], 1.0, True)]
        if not self.index.num_entities or not normalize_entity(mention):
            return []
        vec = mention_vector if mention_vector is not None else self.embed([mention])[0]
        search = self.index.vector_search("entity")
        assert search is not None  # every snapshot has entity vectors
        ids, sims = search.search(vec, fetch)
        dense = [int(i) for i, s in zip(ids[0], sims[0], strict=True) if s >= min_similarity]
        lexical = top_indices(self.entity_bm25.scores(mention), fetch, positive=True)
        fused = weighted_rrf([dense, lexical], weights)[:k]
        return [VertexMatch(e, self.index.entity_names[e], s, False) for e, s in fused]

    def search_triples(
        self,
        query_vector: np.ndarray,
        query: str,
        k: int,
        subset: np.ndarray | None = None,
        fetch: int = 50,
        weights: tuple[float, float] = (0.7, 0.3),
    ) -> list[tuple[int, float]]:
        """The ``k`` best fact triples for a query (within ``subset`` if given) by fused dense+BM25 rank."""
        pool = self.fact_triples if subset is None else np.intersect1d(subset, self.fact_triples)
        if len(pool) == 0:
            return []
        dense = (
            self._dense_facts(query_vector, fetch)
            if subset is None
            else [int(i) for i in self.triple_search.search(query_vector, fetch, subset=pool)[0][0]]
        )
        bm25 = self.triple_bm25.scores(query)
        lexical = top_indices(bm25, fetch, subset=pool, positive=True)
        return weighted_rrf([dense, lexical], weights)[:k]

    def _dense_facts(self, query_vector: np.ndarray, fetch: int) -> list[int]:
        """The ``fetch`` nearest fact triples over all triples: nearest first, ``equivalent`` edges
        skipped (asking for more until enough facts are found or every triple was returned)."""
        search, want = self.triple_search, fetch
        while True:
            ids = search.search(query_vector, want)[0][0]
            facts = [int(i) for i in ids if self.index.kind[i] != KIND_EQUIVALENT]
            if len(facts) >= fetch or want >= search.size:
                return facts[:fetch]
            want *= 4

    def similarity(self, query_vector: np.ndarray, triple_ids: np.ndarray) -> np.ndarray:
        """Cosine similarity of each triple's text to the query."""
        return self.triple_vectors[np.asarray(triple_ids, dtype=np.int64)] @ query_vector

    # -- the memory graph's thesis vertices --------------------------------------------------
    @property
    def has_theses(self) -> bool:
        """Whether the index has thesis vertices (built with ``memory.theses``, issue 52 on)."""
        return self.index.theses is not None and self.index.thesis_embeddings is not None

    def thesis_text(self, thesis_id: int) -> str:
        theses = self.index.theses
        assert theses is not None
        return theses.texts[thesis_id]

    def theses_around(
        self, vertices: list[int] | np.ndarray, query_vector: np.ndarray, k: int
    ) -> list[tuple[int, float]]:
        """Up to ``k`` theses mentioning the walked ``vertices``, as ``(thesis_id, similarity)``:
        those joining two or more of them (the hyper-edge between walked vertices) first, then by
        similarity to the query. Empty without theses."""
        theses, vectors = self.index.theses, self.index.thesis_embeddings
        if theses is None or vectors is None or k <= 0 or len(vertices) == 0:
            return []
        ids, shared = theses.around(vertices)
        if len(ids) == 0:
            return []
        sims = np.asarray(vectors[ids] @ query_vector, dtype=np.float64)
        order = np.lexsort((ids, -sims, -np.minimum(shared, 2)))[:k]
        return [(int(ids[i]), float(sims[i])) for i in order.tolist()]

    def search_theses(self, query_vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The ``k`` theses of the whole memory graph nearest to the query (empty without theses)."""
        search = self.index.vector_search("thesis") if self.has_theses else None
        if search is None or k <= 0 or search.size == 0:
            return []
        ids, sims = search.search(query_vector, k)
        return [(int(i), float(s)) for i, s in zip(ids[0], sims[0], strict=True) if i >= 0]
