"""The exported retriever directory's layout, readable without torch (for quick pre-flight checks)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FORMAT_VERSION = 1
RETRIEVER_CONFIG = "retriever.json"
WEIGHTS = "model.safetensors"
TOKENIZER_DIR = "tokenizer"


class RetrieverLoadError(ValueError):
    """A retriever directory that is missing, from another format version, or corrupted."""


def resolve_retriever_dir(path: str | Path) -> Path:
    """``RUN_DIR`` or ``RUN_DIR/retriever`` → the directory holding ``retriever.json``."""
    p = Path(path)
    for candidate in (p, p / "retriever"):
        if (candidate / RETRIEVER_CONFIG).is_file():
            return candidate
    raise RetrieverLoadError(
        f"{p} is not a retriever directory (no {RETRIEVER_CONFIG} in it or in {p / 'retriever'})"
    )


def read_retriever_meta(path: str | Path) -> tuple[Path, dict[str, Any]]:
    """The retriever directory and its ``retriever.json``, checked for kind, format and weights."""
    directory = resolve_retriever_dir(path)
    try:
        meta = json.loads((directory / RETRIEVER_CONFIG).read_text())
    except json.JSONDecodeError as exc:
        raise RetrieverLoadError(f"{directory / RETRIEVER_CONFIG} is not valid JSON: {exc}") from exc
    if not isinstance(meta, dict):
        raise RetrieverLoadError(f"{directory / RETRIEVER_CONFIG} does not hold a JSON object")
    if meta.get("format_version") != FORMAT_VERSION or meta.get("kind") != "glm":
        raise RetrieverLoadError(
            f"{directory}: retriever format {meta.get('kind')}/{meta.get('format_version')}, "
            f"this hoprag reads glm/{FORMAT_VERSION}"
        )
    if not (directory / WEIGHTS).is_file():
        raise RetrieverLoadError(f"{directory} has no {WEIGHTS}; re-export the retriever")
    return directory, meta
