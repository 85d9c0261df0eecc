"""Read-only access to a KG index: entity lookup, k-hop neighbourhoods, statistics.

Large arrays (embeddings, adjacency) are memory-mapped, so opening an index with millions of
triples costs little; k-hop expansion walks the CSR adjacency and never builds a networkx graph.
networkx is only used for the statistics view (:meth:`KGIndex.to_networkx`).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hoprag.kg.memory import ThesisGraph
from hoprag.kg.store import KGIndexError, VerifyMode, read_manifest, verify_snapshot
from hoprag.kg.tables import (
    KIND_EXTRACTED,
    VECTOR_TABLES,
    Adjacency,
    TripleDocuments,
    ann_file,
    embeddings_file,
    id_lists,
)
from hoprag.text import normalize_entity
from hoprag.vectorsearch import VectorSearchConfig, open_vector_search

if TYPE_CHECKING:
    import networkx as nx

    from hoprag.vectorsearch import VectorSearch


# What KGIndex reads on first use (cached properties); KGIndex.preload reads them at once.
LAZY_TABLES = (
    "documents",
    "document_titles",
    "doc_entities",
    "questions",
    "entity_embeddings",
    "relation_embeddings",
    "triple_doc_ids",
    "entity_documents",
    "triple_embeddings",
    "document_embeddings",
    "theses",
    "thesis_embeddings",
    "vector_searches",
)


class KGIndex:
    """A loaded KG index snapshot (see :mod:`hoprag.kg.tables` for the layout).

    ``verify`` checks the snapshot's files against the manifest before anything is read (see
    :mod:`hoprag.kg.store`): ``"fast"`` (default: small files by sha256, large ones by size and
    sampled chunks), ``"full"`` (sha256 of every file; also ``True``) or ``"none"`` (also
    ``False``). A mismatch is a :class:`~hoprag.kg.store.KGIndexError` naming the file.

    ``vectors`` says how :meth:`vector_search` searches the entity, triple and document vectors
    (the snapshot's ANN indexes where present, or always exact).
    """

    def __init__(
        self,
        index_dir: str | Path,
        verify: VerifyMode | bool = "fast",
        vectors: VectorSearchConfig | None = None,
    ) -> None:
        self.path = Path(index_dir)
        self.vector_config = vectors or VectorSearchConfig()
        self._searches: dict[str, VectorSearch | None] = {}
        self.manifest: dict[str, Any] = read_manifest(self.path)
        self.snapshot = self.path / self.manifest["snapshot"]
        mode: VerifyMode = ("full" if verify else "none") if isinstance(verify, bool) else verify
        verify_snapshot(self.path, self.manifest, mode)
        entities = pq.read_table(self.snapshot / "entities.parquet")
        self.entity_names: list[str] = entities.column("name").to_pylist()
        self.entity_surface: list[str] = entities.column("surface").to_pylist()
        self.relation_names: list[str] = (
            pq.read_table(self.snapshot / "relations.parquet").column("name").to_pylist()
        )
        triples = pq.read_table(
            self.snapshot / "triples.parquet", columns=["head", "relation", "tail", "kind"]
        )
        self.head = triples.column("head").to_numpy()
        self.relation = triples.column("relation").to_numpy()
        self.tail = triples.column("tail").to_numpy()
        self.kind = triples.column("kind").to_numpy()
        adj = np.load(self.snapshot / "adjacency.npz")
        self.adjacency = Adjacency(adj["indptr"], adj["neighbor"], adj["triple_id"], adj["outgoing"])
        self._entity_lookup = {name: i for i, name in enumerate(self.entity_names)}

    # -- sizes -----------------------------------------------------------------------------
    @property
    def num_entities(self) -> int:
        return len(self.entity_names)

    @property
    def num_triples(self) -> int:
        return len(self.head)

    # -- lazily loaded tables --------------------------------------------------------------
    @cached_property
    def documents(self) -> pa.Table:
        return pq.read_table(self.snapshot / "documents.parquet")

    @cached_property
    def document_titles(self) -> list[str]:
        """Document titles by document id (read once; retrieval maps ranked ids to titles per query)."""
        return self.documents.column("title").to_pylist()

    @cached_property
    def doc_entities(self) -> pa.Table:
        return pq.read_table(self.snapshot / "doc_entities.parquet")

    @cached_property
    def questions(self) -> pa.Table | None:
        path = self.snapshot / "questions.parquet"
        return pq.read_table(path) if path.exists() else None

    @cached_property
    def entity_embeddings(self) -> np.ndarray:
        return np.load(self.snapshot / "entity_embeddings.npy", mmap_mode="r")

    @cached_property
    def relation_embeddings(self) -> np.ndarray:
        return np.load(self.snapshot / "relation_embeddings.npy", mmap_mode="r")

    @cached_property
    def triple_embeddings(self) -> np.ndarray | None:
        """Vectors of every triple's text (:func:`~hoprag.kg.tables.triple_text`), memory-mapped;
        ``None`` for an index built before they were part of the snapshot."""
        return self._optional_matrix("triple")

    @cached_property
    def document_embeddings(self) -> np.ndarray | None:
        """The dense retriever's document vectors, memory-mapped; ``None`` when not in the snapshot."""
        return self._optional_matrix("document")

    @cached_property
    def theses(self) -> ThesisGraph | None:
        """The memory graph's thesis vertices (:mod:`hoprag.kg.memory`); ``None`` when the snapshot
        has none (built with ``memory.theses: false`` or before issue 52)."""
        path = self.snapshot / "theses.parquet"
        return ThesisGraph.read(path, self.num_entities) if path.is_file() else None

    @cached_property
    def thesis_embeddings(self) -> np.ndarray | None:
        """Vectors of the thesis texts, memory-mapped; ``None`` without theses."""
        return self._optional_matrix("thesis")

    def _optional_matrix(self, name: str) -> np.ndarray | None:
        path = self.snapshot / embeddings_file(name)
        return np.load(path, mmap_mode="r") if path.is_file() else None

    def vector_search(self, name: str) -> VectorSearch | None:
        """Search over the ``entity``, ``triple``, ``document`` or ``thesis`` vectors (``None`` when the snapshot
        has none): its ANN index, opened memory-mapped, where the snapshot has one and the index's
        ``vectors`` config allows it, else exact. Opened once; a damaged ANN file is a
        :class:`~hoprag.kg.store.KGIndexError` naming it."""
        if name not in VECTOR_TABLES:
            raise ValueError(f"no vector table {name!r}; one of {', '.join(VECTOR_TABLES)}")
        if name not in self._searches:
            matrix = self.entity_embeddings if name == "entity" else self._optional_matrix(name)
            if matrix is None:
                self._searches[name] = None
            else:
                path = self.snapshot / ann_file(name)
                try:
                    self._searches[name] = open_vector_search(matrix, path, self.vector_config)
                except (RuntimeError, ValueError) as exc:  # faiss reports a bad file as RuntimeError
                    raise KGIndexError(
                        f"{path}: cannot open the ANN index ({exc}); the index is damaged, rebuild it "
                        "with `hoprag index`"
                    ) from exc
        return self._searches[name]

    @cached_property
    def triple_doc_ids(self) -> TripleDocuments:
        """Triple id → the ids of the documents it was extracted from (kept as two int arrays, not
        a Python list per triple: ~8 bytes per triple instead of ~100 at 1M triples)."""
        return id_lists(
            pq.read_table(self.snapshot / "triples.parquet", columns=["doc_ids"]).column("doc_ids")
        )

    @cached_property
    def entity_documents(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR ``(indptr, doc_ids)``: the documents each entity occurs in (for document ranking)."""
        from hoprag.retrieval.ranking import entity_document_csr

        links = self.doc_entities
        return entity_document_csr(
            links.column("doc_id").to_numpy().astype(np.int64),
            links.column("entity_id").to_numpy().astype(np.int64),
            self.num_entities,
        )

    def preload(self, tables: Iterable[str] = LAZY_TABLES) -> KGIndex:
        """Read the lazily loaded ``tables`` (default: all) and open their memory maps now. A
        long-running reader (a serving replica) calls it before taking traffic: an index update
        removes a snapshot's files one update after replacing it, and what is already open or read
        stays readable."""
        for name in tables:
            if name not in LAZY_TABLES:
                raise ValueError(f"unknown lazily loaded table {name!r} (known: {', '.join(LAZY_TABLES)})")
            if name == "vector_searches":  # ANN files opened (memory-mapped) now, not on first use
                for table in VECTOR_TABLES:
                    self.vector_search(table)
            else:
                getattr(self, name)
        return self

    @property
    def snapshot_id(self) -> str:
        """The snapshot's name (changes with every write of the index)."""
        return self.snapshot.name

    # -- lookups ---------------------------------------------------------------------------
    def entity_id(self, name: str) -> int | None:
        """Id of an entity by any spelling (normalized before lookup), or ``None``."""
        return self._entity_lookup.get(normalize_entity(name))

    def triple(self, triple_id: int) -> tuple[str, str, str]:
        """The (head, relation, tail) strings of one triple."""
        return (
            self.entity_names[int(self.head[triple_id])],
            self.relation_names[int(self.relation[triple_id])],
            self.entity_names[int(self.tail[triple_id])],
        )

    def neighbors(self, entity_id: int) -> tuple[np.ndarray, np.ndarray]:
        """``(neighbor_entity_ids, triple_ids)`` of all triples touching ``entity_id`` (both directions)."""
        return self.adjacency.neighbors(entity_id)

    def k_hop(self, seeds: Iterable[int], k: int, max_entities: int | None = None) -> dict[int, int]:
        """Entities within ``k`` hops of ``seeds`` → their hop distance (BFS over the CSR adjacency).

        Cost depends on the size of the neighbourhood, not of the whole graph.
        """
        dist = {int(s): 0 for s in seeds}
        frontier = list(dist)
        for hop in range(1, k + 1):
            nxt = []
            for e in frontier:
                nbrs, _ = self.neighbors(e)
                for n in nbrs.tolist():
                    if n not in dist:
                        dist[n] = hop
                        nxt.append(n)
                        if max_entities is not None and len(dist) >= max_entities:
                            return dist
            frontier = nxt
        return dist

    # -- analysis view ---------------------------------------------------------------------
    def to_networkx(self, include_equivalent: bool = True) -> nx.MultiDiGraph:
        """The KG as a networkx multigraph (for statistics and analysis, not the hot path)."""
        import networkx as nx

        g = nx.MultiDiGraph()
        g.add_nodes_from(range(self.num_entities))
        mask = np.ones(self.num_triples, bool) if include_equivalent else self.kind == KIND_EXTRACTED
        for tid in np.flatnonzero(mask).tolist():
            g.add_edge(int(self.head[tid]), int(self.tail[tid]), key=tid, relation=int(self.relation[tid]))
        return g
