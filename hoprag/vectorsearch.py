"""Nearest-neighbour search over L2-normalized vectors (cosine = dot product).

One contract, :class:`VectorSearch`, two implementations:

- :class:`ExactSearch`: blocked matrix products over the (memory-mapped) vector matrix. Exact,
  no extra file, cost linear in the number of rows.
- :class:`AnnSearch`: an approximate index read memory-mapped from the index snapshot, so that
  every replica on a node shares its pages; used only for searches over *all* rows. A search
  within a ``subset`` (the planner's neighbourhood searches) stays exact over the subset's rows.

Ties are broken by the lower row id in both, so the exact path returns exactly what the scans it
replaced returned. :func:`open_vector_search` picks between them by size.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import Field

from hoprag.config import StrictModel


@runtime_checkable
class VectorSearch(Protocol):
    """Top-k rows by dot product with each query (queries ``[n, d]`` float32, L2-normalized)."""

    @property
    def size(self) -> int: ...

    @property
    def kind(self) -> str: ...

    def search(
        self, queries: np.ndarray, k: int, subset: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, scores)`` of shape ``[n, min(k, candidates)]``, best first; ``subset`` limits
        the candidates to those row ids."""
        ...


def _as_queries(queries: np.ndarray) -> np.ndarray:
    q = np.asarray(queries, dtype=np.float32)
    return q[None, :] if q.ndim == 1 else q


def top_k_rows(sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``sims`` ``[n, m]``: the ``k`` best column positions and their scores, best
    first, ties by the lower position (argpartition for the cut, then an exact sort of the few
    columns that reach it)."""
    n, m = sims.shape
    k = min(k, m)
    idx = np.zeros((n, k), dtype=np.int64)
    val = np.zeros((n, k), dtype=np.float32)
    if k == 0:
        return idx, val
    for r in range(n):
        row = sims[r]
        if k < m:
            kth = row[np.argpartition(-row, k - 1)[k - 1]]
            cand = np.flatnonzero(row >= kth)  # every column tied with the k-th competes
        else:
            cand = np.arange(m)
        order = np.lexsort((cand, -row[cand]))[:k]
        idx[r] = cand[order]
        val[r] = row[idx[r]]
    return idx, val


class ExactSearch:
    """Exact search over a vector matrix (an ``np.load(mmap_mode="r")`` array is read in place)."""

    def __init__(self, vectors: np.ndarray, block: int = 65536) -> None:
        self.vectors = vectors
        self.block = block

    @property
    def size(self) -> int:
        return len(self.vectors)

    @property
    def kind(self) -> str:
        return "exact"

    def search(
        self, queries: np.ndarray, k: int, subset: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        q = _as_queries(queries)
        if subset is not None:
            rows = np.asarray(subset, dtype=np.int64)
            sims = (np.asarray(self.vectors[rows], dtype=np.float32) @ q.T).T
            idx, val = top_k_rows(sims, k)
            return rows[idx], val
        m = self.size
        if m <= self.block:
            sims = (np.asarray(self.vectors, dtype=np.float32) @ q.T).T
            return top_k_rows(sims, k)
        # Blocked over rows, so a large memory-mapped matrix is never copied whole: keep each
        # block's top-k, then merge (ties stay by the lower id: blocks are visited in id order).
        parts_i, parts_v = [], []
        for start in range(0, m, self.block):
            chunk = np.asarray(self.vectors[start : start + self.block], dtype=np.float32)
            i, v = top_k_rows((chunk @ q.T).T, k)
            parts_i.append(i + start)
            parts_v.append(v)
        all_i, all_v = np.concatenate(parts_i, axis=1), np.concatenate(parts_v, axis=1)
        pos, val = top_k_rows(all_v, k)
        return np.take_along_axis(all_i, pos, axis=1), val


# -- approximate search (faiss IVF with 8-bit codes, rescored exactly) -------------------------

ANN_SUFFIX = ".faiss"


class VectorSearchConfig(StrictModel):
    """How an index's vectors are searched at query time (``vector_search`` of QA settings)."""

    mode: Literal["auto", "exact"] = Field(
        default="auto",
        description="auto: the snapshot's ANN index where it has one (written for matrices of at least "
        "IndexConfig.vectors.ann_min_rows rows), exact search otherwise; exact: always scan every row "
        "(the baseline of `hoprag bench serve --vector-search`).",
    )
    nprobe: int = Field(
        default=16,
        ge=1,
        description="IVF lists visited per query (recall vs latency; see docs/bench-serving.md).",
    )
    rerank: int = Field(
        default=4,
        ge=1,
        description="Candidates taken from the 8-bit codes per wanted result (at least 40), then scored "
        "exactly from the float32 rows, so returned scores are exact cosines.",
    )


class AnnBuildConfig(StrictModel):
    """When and how ``hoprag index`` writes an ANN index beside a vector matrix."""

    ann_min_rows: int = Field(
        default=50_000,
        ge=0,
        description="Write a faiss IVF index for entity/triple/document matrices with at least this many "
        "rows; smaller ones are searched exactly (an exact scan of 50k 384-d rows takes ~3.5 ms on 2 "
        "cores, docs/bench-serving.md). 0 writes one for every non-empty matrix.",
    )


def ann_lists(rows: int) -> int:
    """IVF lists for ``rows`` vectors: ~4·sqrt(rows) (faiss' guideline), at least 1, and few enough
    that k-means has ≥ 39 training points per list."""
    return int(max(1, min(4 * np.sqrt(rows), rows // 39)))


def build_ann_index(vectors: np.ndarray, path: Path, seed: int = 0) -> None:
    """Write a faiss IVF index (8-bit scalar-quantized codes, inner product) over ``vectors`` to
    ``path``. Trained on a seeded sample, so the same vectors give the same file."""
    import faiss

    data = np.ascontiguousarray(vectors, dtype=np.float32)
    rows, dim = data.shape
    nlist = ann_lists(rows)
    quantizer = faiss.IndexFlatIP(dim)
    index = faiss.IndexIVFScalarQuantizer(
        quantizer, dim, nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
    )
    rng = np.random.default_rng(seed)
    sample = data[np.sort(rng.choice(rows, min(rows, 64 * nlist), replace=False))]
    index.cp.seed = seed
    index.train(sample)
    index.add(data)
    faiss.write_index(index, str(path))


class AnnSearch:
    """Approximate top-k over all rows through a memory-mapped faiss IVF index; exact scores.

    The IVF index proposes ``max(40, rerank·k)`` candidates from its 8-bit codes; their float32
    rows (the memory-mapped matrix the index was built from) give the exact scores and the final
    order. A ``subset`` search is exact over the subset's rows (:class:`ExactSearch`).
    """

    def __init__(self, path: Path, vectors: np.ndarray, nprobe: int = 16, rerank: int = 4) -> None:
        import faiss

        self.path = Path(path)
        # Memory-mapped: replicas on one node share the pages; opening costs no read.
        self._index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
        if self._index.ntotal != len(vectors) or self._index.d != vectors.shape[1]:
            raise ValueError(
                f"{path} holds {self._index.ntotal} vectors of dim {self._index.d}, "
                f"the matrix {vectors.shape}"
            )
        faiss.extract_index_ivf(self._index).nprobe = nprobe
        self.rerank = rerank
        self.exact = ExactSearch(vectors)

    @property
    def size(self) -> int:
        return self.exact.size

    @property
    def kind(self) -> str:
        return "ann"

    def search(
        self, queries: np.ndarray, k: int, subset: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        if subset is not None:
            return self.exact.search(queries, k, subset)
        q = np.ascontiguousarray(_as_queries(queries))
        k = min(k, self.size)
        _, cand = self._index.search(q, max(40, self.rerank * k))
        ids = np.zeros((len(q), k), dtype=np.int64)
        scores = np.zeros((len(q), k), dtype=np.float32)
        for r, row in enumerate(cand):
            rows = np.unique(row[row >= 0])  # sorted: ties stay by the lower id
            i, s = top_k_rows((np.asarray(self.exact.vectors[rows], dtype=np.float32) @ q[r])[None, :], k)
            got = i.shape[1]
            ids[r, :got], scores[r, :got] = rows[i[0]], s[0]
            if got < k:  # fewer candidates than asked (tiny lists): exact for this query
                ids[r], scores[r] = (a[0] for a in self.exact.search(q[r], k))
        return ids, scores


def open_vector_search(
    vectors: np.ndarray, ann_path: Path | None, config: VectorSearchConfig | None = None
) -> VectorSearch:
    """:class:`AnnSearch` when ``ann_path`` exists and ``config.mode`` is ``auto``, else exact."""
    config = config or VectorSearchConfig()
    if config.mode == "auto" and ann_path is not None and ann_path.is_file():
        return AnnSearch(ann_path, vectors, nprobe=config.nprobe, rerank=config.rerank)
    return ExactSearch(vectors)
