"""The memory graph's thesis vertices, built from the documents and the extraction's entities.

PAI-1 keeps, beside the entity–relation–entity triples, *thesis* vertices (atomic statements as
hyper-edges over the entities they mention) and *episodic* vertices (the source passages). Here a
thesis is one sentence of a passage (sentence boundaries by ``pysbd``), linked to the KG entities
the passage's extraction found and the sentence names, and always to the passage's title entity
when there is one (in encyclopedic text the subject of "He was born in Worms." is the title). A
sentence that does not name its title is stored as ``"Title: sentence"`` so that it reads on its
own in a prompt. No LLM call: the extraction output and the passage already carry it.

Statements with the same meaning are one thesis (PAI-2's stated limitation is exact-string
dedup): statements naming the same entities whose vectors are at cosine ≥ ``dedup_threshold`` are
merged, and the thesis keeps every passage that states it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from hoprag.embedding import Embedder, embed_with_reuse, top_k_cosine
from hoprag.kg.tables import Theses
from hoprag.text import normalize_entity
from indexing.config import MemoryGraphConfig

if TYPE_CHECKING:
    import pysbd

    from indexing.corpus import Document

logger = logging.getLogger(__name__)

_DEDUP_NEIGHBOURS = 8  # nearest statements examined per statement when merging by meaning


@lru_cache(maxsize=1)
def _segmenter() -> pysbd.Segmenter:
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def split_statements(text: str, min_chars: int = 16, max_chars: int = 400) -> list[str]:
    """The sentences of ``text`` (whitespace-normalized), without those shorter than ``min_chars``;
    a longer sentence than ``max_chars`` is cut at a word boundary."""
    out = []
    for sentence in _segmenter().segment(text or ""):
        sentence = " ".join(sentence.split())
        if len(sentence) < min_chars:
            continue
        if len(sentence) > max_chars:
            cut = sentence.rfind(" ", 0, max_chars)
            sentence = sentence[: cut if cut > 0 else max_chars]
        out.append(sentence)
    return out


def _mentioned(sentence: str, candidates: Sequence[tuple[int, str]]) -> list[int]:
    """The candidate entities (id, normalized name) whose name occurs in ``sentence`` as whole words."""
    padded = f" {normalize_entity(sentence)} "
    return [e for e, name in candidates if name and f" {name} " in padded]


def statement_candidates(
    documents: Sequence[Document],
    doc_entity_doc: np.ndarray,
    doc_entity_entity: np.ndarray,
    entity_names: Sequence[str],
    config: MemoryGraphConfig,
) -> tuple[list[str], list[int], list[list[int]]]:
    """Every statement before dedup: ``(texts, document of each, entities of each)``. A sentence that
    names no entity (and has no title entity to belong to) is not a thesis: nothing reaches it."""
    by_doc: dict[int, list[int]] = {}
    for d, e in zip(doc_entity_doc.tolist(), doc_entity_entity.tolist(), strict=True):
        by_doc.setdefault(d, []).append(e)
    entity_index = {n: i for i, n in enumerate(entity_names)}
    texts: list[str] = []
    docs: list[int] = []
    entities: list[list[int]] = []
    for d, doc in enumerate(documents):
        title_name = normalize_entity(doc.title)
        title_entity = entity_index.get(title_name)
        candidates = [(e, entity_names[e]) for e in by_doc.get(d, [])]
        for sentence in split_statements(doc.text, config.min_chars, config.max_chars):
            linked = _mentioned(sentence, candidates)
            names_title = bool(title_name) and f" {title_name} " in f" {normalize_entity(sentence)} "
            if title_entity is not None and title_entity not in linked:
                linked.insert(0, title_entity)
            if not linked:
                continue
            texts.append(
                sentence if names_title or not doc.title.strip() else f"{doc.title.strip()}: {sentence}"
            )
            docs.append(d)
            entities.append(sorted(set(linked)))
    return texts, docs, entities


def merge_by_meaning(
    vectors: np.ndarray, threshold: float, objects: Sequence[Sequence[int]] | None = None
) -> np.ndarray:
    """For each statement, the id of the statement it is merged into (the lowest id among those
    connected by cosine ≥ ``threshold`` and, with ``objects``, naming the same entities; itself
    when none). Templated sentences about different things ("The protein A was first
    characterized in 1990." / "The protein B ...") embed close together; the same statement names
    the same entities."""
    n = len(vectors)
    keys = [frozenset(o) for o in objects] if objects is not None else None
    parent = np.arange(n)
    if n < 2:
        return parent

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = int(parent[i])
        return i

    idx, sims = top_k_cosine(vectors, vectors, min(_DEDUP_NEIGHBOURS, n), block=1024)
    rows = np.repeat(np.arange(n), idx.shape[1]).reshape(idx.shape)
    close = (sims >= threshold) & (idx != rows)
    for a, b in zip(rows[close].tolist(), idx[close].tolist(), strict=True):
        if keys is not None and keys[a] != keys[b]:
            continue
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return np.array([root(i) for i in range(n)])


def build_theses(
    documents: Sequence[Document],
    doc_entity_doc: np.ndarray,
    doc_entity_entity: np.ndarray,
    entity_names: Sequence[str],
    embedder: Embedder,
    config: MemoryGraphConfig,
    previous_vectors: dict[str, np.ndarray] | None = None,
) -> Theses:
    """The thesis vertices of a snapshot (see the module docstring). ``previous_vectors`` (text →
    vector of the previous snapshot's theses) spares an incremental build re-embedding them."""
    texts, docs, entities = statement_candidates(
        documents, doc_entity_doc, doc_entity_entity, entity_names, config
    )
    vectors, missing = embed_with_reuse(texts, previous_vectors or {}, embedder)
    into = merge_by_meaning(vectors, config.dedup_threshold, entities)
    keep = np.flatnonzero(into == np.arange(len(texts)))
    position = {int(k): j for j, k in enumerate(keep.tolist())}
    merged_docs: list[set[int]] = [set() for _ in keep]
    merged_entities: list[set[int]] = [set() for _ in keep]
    for i, target in enumerate(into.tolist()):
        j = position[target]
        merged_docs[j].add(docs[i])
        merged_entities[j].update(entities[i])
    logger.info(
        "memory graph: %d theses from %d statements (%d merged by meaning, %d embedded)",
        len(keep),
        len(texts),
        len(texts) - len(keep),
        len(missing),
    )
    return Theses(
        texts=[texts[k] for k in keep.tolist()],
        doc_ids=[sorted(s) for s in merged_docs],
        entity_ids=[sorted(s) for s in merged_entities],
        embeddings=vectors[keep] if len(keep) else np.zeros((0, embedder.dim), np.float32),
        merged=len(texts) - len(keep),
    )
