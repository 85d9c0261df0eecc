"""HippoRAG 2's retrieval on a hoprag KG index: Personalized PageRank over entities and passages.

HippoRAG 2 (Gutiérrez et al., 2025, "From RAG to Memory") puts every passage into the knowledge
graph beside the entities and walks it from the question:

- **nodes**: the index's entities and its documents (passages);
- **edges** (undirected): an extracted triple joins its head and tail, a synonym (``equivalent``)
  triple joins two spellings of one thing, and a document joins each entity it mentions
  (``doc_entities``);
- **restart vector**: the question is matched against the triples' texts (query-to-triple, the
  ``linking_top_k`` best facts through the snapshot's triple search, cosines min-max normalized
  with the floor taken over a fixed sample of facts: all of them on small graphs); each entity of those
  facts gets the fact's score divided by the
  number of documents it occurs in (rarer entities say more), and only the ``linking_top_k`` best
  entities by mean fact score stay (with ``question_entities``, the question's linked entities join
  them, scored by their vector's similarity to the question). Every passage gets its dense
  similarity to the question, min-max normalized and scaled by ``passage_node_weight``;
- **walk**: PPR by power iteration on the column-normalized sparse matrix (``scipy.sparse``),
  ``damping`` the probability of following an edge; documents are ranked by their PPR mass.

A question with no fact above zero and no linked entity has no entity seed; it is answered by the
dense ranking, with a note (as HippoRAG 2 falls back to dense passage retrieval). The paper's LLM
fact filter ("recognition memory") is not part of this retriever. Defaults are the paper's
(damping 0.5, passage node weight 0.05, linking top-k 5).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hoprag.embedding import Embedder
from hoprag.kg.index import KGIndex
from hoprag.kg.tables import KIND_EQUIVALENT, KIND_EXTRACTED, triple_texts
from hoprag.retrieval.base import RankedDocument, RetrievalQuery, RetrievalResult
from hoprag.retrieval.dense import document_passages
from hoprag.retrieval.ppr_settings import PPRSettings
from hoprag.vectorsearch import ExactSearch, VectorSearch

logger = logging.getLogger(__name__)

_FLOOR_SAMPLE = 4096  # facts whose lowest cosine is the min-max floor of fact scores


@dataclass(frozen=True)
class PassageGraph:
    """The entity + passage graph as a column-stochastic sparse transition matrix."""

    transition: object  # scipy.sparse.csc_matrix, [nodes, nodes]; column j: where a walker at j goes
    num_entities: int
    num_documents: int
    entity_doc_counts: np.ndarray  # documents each entity occurs in
    dangling: np.ndarray  # nodes without an edge (their walkers return to the restart vector)

    @property
    def num_nodes(self) -> int:
        return self.num_entities + self.num_documents


def build_passage_graph(index: KGIndex) -> PassageGraph:
    """The undirected graph of HippoRAG 2 over ``index`` (module docstring), one weight per edge
    occurrence (a pair joined by several triples is joined more strongly)."""
    import scipy.sparse as sp

    n_ent, n_doc = index.num_entities, len(index.document_titles)
    keep = (index.kind == KIND_EXTRACTED) | (index.kind == KIND_EQUIVALENT)
    heads = index.head[keep].astype(np.int64)
    tails = index.tail[keep].astype(np.int64)
    not_loop = heads != tails
    heads, tails = heads[not_loop], tails[not_loop]
    links = index.doc_entities
    doc_ids = links.column("doc_id").to_numpy().astype(np.int64)
    ent_ids = links.column("entity_id").to_numpy().astype(np.int64)
    rows = np.concatenate([heads, tails, ent_ids, doc_ids + n_ent])
    cols = np.concatenate([tails, heads, doc_ids + n_ent, ent_ids])
    n = n_ent + n_doc
    adjacency = sp.csc_matrix((np.ones(len(rows), np.float64), (rows, cols)), shape=(n, n))
    adjacency.sum_duplicates()
    out_weight = np.asarray(adjacency.sum(axis=0)).ravel()
    scale = np.divide(1.0, out_weight, out=np.zeros_like(out_weight), where=out_weight > 0)
    transition = adjacency @ sp.diags(scale)  # columns sum to 1 (0 for an isolated node)
    doc_counts = np.bincount(ent_ids, minlength=n_ent) if len(ent_ids) else np.zeros(n_ent, np.int64)
    return PassageGraph(transition.tocsr(), n_ent, n_doc, doc_counts, out_weight == 0)


def personalized_pagerank(
    graph: PassageGraph, restart: np.ndarray, damping: float, max_iterations: int, tolerance: float
) -> np.ndarray:
    """PPR scores, one column per restart vector (``restart``: ``[nodes, queries]``, each column
    summing to 1): ``r = (1 - d) * restart + d * (P r + dangling mass * restart)``, iterated to
    ``tolerance``. Mass that reaches a node without edges returns to the restart vector, so every
    column of the result sums to 1."""
    transition, dangling = graph.transition, graph.dangling
    scores = restart.copy()
    for _ in range(max_iterations):
        walked = transition @ scores  # type: ignore[operator]
        lost = scores[dangling].sum(axis=0, keepdims=True)
        updated = (1.0 - damping) * restart + damping * (walked + lost * restart)
        change = np.abs(updated - scores).sum(axis=0).max()
        scores = updated
        if change < tolerance:
            break
    return scores


def _spread_runs(items: np.ndarray, size: int, runs: int) -> np.ndarray:
    """``size`` items of ``items`` as ``runs`` runs of consecutive ones, evenly spread."""
    length = size // runs
    starts = np.linspace(0, len(items) - length, runs).astype(np.int64)
    return np.concatenate([items[start : start + length] for start in starts])


def _min_max(values: np.ndarray) -> np.ndarray:
    low, high = values.min(axis=-1, keepdims=True), values.max(axis=-1, keepdims=True)
    span = np.where(high > low, high - low, 1.0)
    return np.where(high > low, (values - low) / span, 0.0)


class PPRRetriever:
    """HippoRAG 2's Personalized PageRank retriever (module docstring). Thread-safe after load."""

    def __init__(self, index: KGIndex, embedder: Embedder, settings: PPRSettings | None = None) -> None:
        self.settings = settings or PPRSettings()
        self._index = index
        self._embedder = embedder
        self._titles = index.document_titles
        self._graph = build_passage_graph(index)
        stored = index.manifest.get("embedder") == embedder.model_id  # else its vectors do not fit
        self._facts = np.flatnonzero(index.kind == KIND_EXTRACTED)
        self._documents: np.ndarray = (
            index.document_embeddings
            if stored and index.document_embeddings is not None
            else self._encode(document_passages(index), "documents")
        )
        # Facts are searched through the snapshot's triple search (an ANN index at scale, exact
        # below its size threshold; synonym triples filtered out) or, without stored vectors,
        # exactly over vectors encoded now. Search row -> triple id: ``_fact_ids``.
        triples = index.vector_search("triple") if stored else None
        # The min-max floor of fact scores: the lowest cosine over a fixed sample of facts (all of
        # them up to _FLOOR_SAMPLE), read once. The sample is 16 runs of consecutive facts spread
        # over the file: scattered single rows would page in most of a 1.5 GB matrix at 1M triples.
        sample = np.arange(len(self._facts))
        if len(sample) > _FLOOR_SAMPLE:
            sample = _spread_runs(sample, _FLOOR_SAMPLE, 16)
        if triples is not None and triples.size == index.num_triples:
            self._fact_search: VectorSearch = triples
            self._fact_ids = np.arange(index.num_triples)
            floor = np.asarray(index.triple_embeddings[self._facts[sample]])  # type: ignore[index]
        else:
            encoded = self._encode(self._fact_texts(), "facts")
            self._fact_search = ExactSearch(encoded)
            self._fact_ids = self._facts
            floor = encoded[sample]
        self._floor_vectors = floor.astype(np.float32, copy=False)
        self._entity_vectors = index.entity_embeddings if stored else None

    def _fact_texts(self) -> list[str]:
        ix, rows = self._index, self._facts
        return triple_texts(
            ix.entity_names,
            ix.entity_surface,
            ix.relation_names,
            ix.head[rows],
            ix.relation[rows],
            ix.tail[rows],
        )

    def _encode(self, texts: list[str], what: str) -> np.ndarray:
        """Vectors encoded now: an index built with another embedder, or before its snapshot kept them."""
        logger.info("embedding %d %s of %s for PPR (not in the snapshot)", len(texts), what, self._index.path)
        if not texts:
            return np.zeros((0, self._embedder.dim), np.float32)
        return self._embedder.encode(texts)

    @property
    def name(self) -> str:
        return "ppr"

    def retrieve(self, queries: Sequence[RetrievalQuery], k: int) -> list[RetrievalResult]:
        if not queries:
            return []
        vectors = self._embedder.encode([q.question for q in queries])
        dense = self._passage_scores(vectors)
        restart, seeds = self._restart(queries, vectors, dense)
        seeded = restart[: self._graph.num_entities].sum(axis=0) > 0
        restart /= restart.sum(axis=0, keepdims=True).clip(min=1e-30)
        scores = personalized_pagerank(
            self._graph, restart, self.settings.damping, self.settings.max_iterations, self.settings.tolerance
        )
        return [
            self._result(scores[:, j], dense[j], k, seeds[j]) if seeded[j] else self._dense_only(dense[j], k)
            for j in range(len(queries))
        ]

    def _passage_scores(self, vectors: np.ndarray) -> np.ndarray:
        """Cosine similarity of every document to each query, ``[queries, documents]``."""
        if self._graph.num_documents == 0:
            return np.zeros((len(vectors), 0))
        return (vectors @ np.asarray(self._documents, dtype=np.float32).T).astype(np.float64)

    def _restart(
        self, queries: Sequence[RetrievalQuery], vectors: np.ndarray, dense: np.ndarray
    ) -> tuple[np.ndarray, list[list[str]]]:
        """The restart vector of each query (``[nodes, queries]``, not yet normalized) and the names
        of its entity seeds."""
        graph, s = self._graph, self.settings
        restart = np.zeros((graph.num_nodes, len(queries)))
        all_seeds: list[list[str]] = []
        for j, (query, facts) in enumerate(zip(queries, self._top_facts(vectors), strict=True)):
            scores: dict[int, list[float]] = {}
            for fact, score in facts:
                if score > 0:
                    for entity in (int(self._index.head[fact]), int(self._index.tail[fact])):
                        scores.setdefault(entity, []).append(score)
            if s.question_entities and self._entity_vectors is not None:
                for name in query.question_entities:
                    entity = self._index.entity_id(name)
                    if entity is not None:
                        similarity = float(np.asarray(self._entity_vectors[entity], np.float32) @ vectors[j])
                        if similarity > 0:
                            scores.setdefault(entity, []).append(similarity)
            best = sorted(scores.items(), key=lambda kv: -float(np.mean(kv[1])))[: s.linking_top_k]
            for entity, values in best:  # a seed's weight: its best score over the documents it is in
                restart[entity, j] = max(values) / max(1, int(graph.entity_doc_counts[entity]))
            all_seeds.append([self._index.entity_names[e] for e, _ in best])
            if graph.num_documents:
                restart[graph.num_entities :, j] = _min_max(dense[j]) * s.passage_node_weight
        return restart, all_seeds

    def _top_facts(self, vectors: np.ndarray) -> list[list[tuple[int, float]]]:
        """The ``linking_top_k`` best (triple id, score) of each query among the extracted facts,
        best first; a score is the fact's cosine min-max normalized (as HippoRAG 2 scores facts),
        the floor being the lowest cosine over the fact sample."""
        k = self.settings.linking_top_k
        if len(self._facts) == 0:
            return [[] for _ in vectors]
        # synonym triples share the search: ask for more, keep the extracted ones
        wanted = min(self._fact_search.size, 4 * k + 16)
        ids, sims = self._fact_search.search(vectors, wanted)
        floors = (vectors @ self._floor_vectors.T).min(axis=1)
        out = []
        for j in range(len(vectors)):
            found = [
                (int(self._fact_ids[i]), float(c))
                for i, c in zip(ids[j], sims[j], strict=True)
                if i >= 0 and self._index.kind[self._fact_ids[i]] == KIND_EXTRACTED
            ][:k]
            if not found:
                out.append([])
                continue
            low, high = min(float(floors[j]), found[-1][1]), found[0][1]
            span = high - low
            out.append([(t, (c - low) / span if span > 0 else 1.0) for t, c in found])
        return out

    def _result(self, scores: np.ndarray, dense: np.ndarray, k: int, seeds: list[str]) -> RetrievalResult:
        graph = self._graph
        docs = scores[graph.num_entities :]
        order = np.lexsort((-dense, -docs))[:k]  # PPR mass, ties by dense similarity
        entities = scores[: graph.num_entities]
        top = np.argsort(-entities, kind="stable")[: self.settings.top_entities]
        return RetrievalResult(
            documents=[RankedDocument(int(d), self._titles[int(d)], float(docs[d])) for d in order],
            entities=[(self._index.entity_names[int(e)], float(entities[e])) for e in top if entities[e] > 0],
            notes=[f"ppr seeds: {', '.join(seeds)}"],
            seeds=list(seeds),
        )

    def _dense_only(self, dense: np.ndarray, k: int) -> RetrievalResult:
        order = np.argsort(-dense, kind="stable")[:k]
        return RetrievalResult(
            documents=[RankedDocument(int(d), self._titles[int(d)], float(dense[d])) for d in order],
            notes=["ppr: no fact or linked entity matched the question; dense ranking"],
        )
