"""A document update of an existing index with the settings it was built with.

What ``hoprag index --add`` / ``--delete`` does, driven by the index's own manifest (its recorded
LLM, extraction and Ray settings) instead of a config file: the serving app runs it in a Ray task
for ``POST/DELETE /v1/indexes/{name}/documents``. The new snapshot replaces the old one atomically
(:func:`hoprag.kg.store.write_snapshot`): a failure at any point leaves the index as it was.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

UpdateAction = Literal["add", "delete"]


@dataclass(frozen=True)
class UpdateOutcome:
    snapshot: str
    summary: dict[str, Any]


def recorded_index_config(index_dir: Path) -> Any:
    """The :class:`~indexing.config.IndexConfig` an index's manifest records (what built it)."""
    from pydantic import ValidationError

    from hoprag.kg.store import KGIndexError, read_manifest
    from indexing.config import IndexConfig

    manifest = read_manifest(index_dir)
    if manifest.get("source"):
        raise KGIndexError(
            f"{index_dir} was built from a pre-built graph; documents cannot be added to or removed "
            "from it (rebuild it with hoprag index --graph)"
        )
    try:
        return IndexConfig.model_validate(manifest.get("config") or {})
    except ValidationError as exc:
        raise KGIndexError(f"{index_dir}: the manifest's recorded config is not valid: {exc}") from exc


def read_documents_jsonl(path: Path) -> list[tuple[str, str]]:
    """``(title, text)`` pairs of a JSONL file of ``{"title", "text"}`` objects."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            obj = json.loads(line)
            rows.append((str(obj["title"]), str(obj["text"])))
    return rows


def update_index_documents(
    index_dir: str | Path,
    action: UpdateAction,
    documents: Sequence[tuple[str, str]] = (),
    titles: Sequence[str] = (),
) -> UpdateOutcome:
    """Add ``documents`` (``(title, text)``; a known title is replaced) or delete ``titles`` from the
    index at ``index_dir``; returns the new snapshot's name and the build summary."""
    from hoprag.kg.store import read_manifest
    from indexing.corpus import Corpus, Document
    from indexing.pipeline import build_index

    index_dir = Path(index_dir)
    config = recorded_index_config(index_dir)
    if action == "add":
        if not documents:
            raise ValueError("an add needs at least one document")
        corpus = Corpus([Document(title, text) for title, text in documents], source="upload")
        summary = build_index(index_dir, config, corpus=corpus, add=True)
    else:
        if not titles:
            raise ValueError("a delete needs at least one title")
        summary = build_index(index_dir, config, delete_titles=list(titles))
    snapshot = str(read_manifest(index_dir)["snapshot"]).rsplit("/", 1)[-1]
    return UpdateOutcome(snapshot=snapshot, summary=summary.to_dict())
