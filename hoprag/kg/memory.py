"""Read view of the memory graph's thesis vertices (PAI-1's hybrid graph, beside the triple KG).

Object vertices are the KG's entities, episodic vertices its documents; a thesis vertex is one
atomic statement, a hyper-edge joining the objects it mentions, linked to the episodes that state
it (``theses.parquet``, :mod:`hoprag.kg.tables`). Lists are held as CSR arrays, and the inverse
object → theses list is built once on load, so a traversal reaches the theses of a vertex in
O(its degree).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from hoprag.kg.tables import TripleDocuments, id_lists

IdLists = TripleDocuments
"""Id → list of ids as CSR arrays (the same reader as a triple's documents)."""


def invert(lists: IdLists, num_targets: int) -> IdLists:
    """The inverse relation as CSR: target id → the ids whose list names it (ascending)."""
    counts = np.diff(lists.offsets)
    owners = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    targets = lists.doc_ids
    order = np.lexsort((owners, targets))
    offsets = np.zeros(num_targets + 1, dtype=np.int64)
    np.cumsum(np.bincount(targets, minlength=num_targets)[:num_targets], out=offsets[1:])
    return IdLists(offsets, owners[order])


class ThesisGraph:
    """The thesis vertices of one snapshot: texts, their episodes and objects, and object → theses."""

    def __init__(self, texts: list[str], episodes: IdLists, objects: IdLists, num_entities: int) -> None:
        self.texts = texts
        self.episodes = episodes
        self.objects = objects
        self.of_entity = invert(objects, num_entities)

    @classmethod
    def read(cls, path: Path, num_entities: int) -> ThesisGraph:
        table = pq.read_table(path, columns=["text", "doc_ids", "entity_ids"])
        return cls(
            table.column("text").to_pylist(),
            id_lists(table.column("doc_ids")),
            id_lists(table.column("entity_ids")),
            num_entities,
        )

    def __len__(self) -> int:
        return len(self.texts)

    def around(self, entity_ids: np.ndarray | list[int]) -> tuple[np.ndarray, np.ndarray]:
        """``(thesis_ids, shared)``: every thesis mentioning one of ``entity_ids``, with how many of
        them it mentions (a thesis joining two walked vertices is the hyper-edge between them)."""
        parts = [
            self.of_entity.doc_ids[self.of_entity.offsets[e] : self.of_entity.offsets[e + 1]]
            for e in set(int(x) for x in entity_ids)
            if 0 <= e < len(self.of_entity)
        ]
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        ids, shared = np.unique(np.concatenate(parts), return_counts=True)
        return ids, shared

    @property
    def num_object_links(self) -> int:
        return len(self.objects.doc_ids)

    @property
    def num_episode_links(self) -> int:
        return len(self.episodes.doc_ids)
