"""The exported retriever directory's layout (GLM and GNN alike), readable without torch (for quick
pre-flight checks)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

FORMAT_VERSION = 1
RETRIEVER_CONFIG = "retriever.json"
WEIGHTS = "model.safetensors"
TOKENIZER_DIR = "tokenizer"
# The name that stands for the GLM shipped with hoprag wherever a retriever directory is read.
PACKAGED_GLM_NAME = "packaged-glm"
# What a retriever directory can hold: the GLM (hoprag.glm) or the GNN baseline (hoprag.gnn).
RETRIEVER_KINDS = ("glm", "gnn")


class RetrieverLoadError(ValueError):
    """A retriever directory that is missing, from another format version, or corrupted."""


def retriever_path(path: str | Path) -> Path:
    """A retriever as given: :data:`PACKAGED_GLM_NAME` → the shipped GLM's directory, else the path."""
    from hoprag.paths import PACKAGED_GLM

    return PACKAGED_GLM if str(path) == PACKAGED_GLM_NAME else Path(path)


def resolve_retriever_dir(path: str | Path) -> Path:
    """``RUN_DIR`` or ``RUN_DIR/retriever`` (or ``packaged-glm``) → the directory holding ``retriever.json``."""
    p = retriever_path(path)
    for candidate in (p, p / "retriever"):
        if (candidate / RETRIEVER_CONFIG).is_file():
            return candidate
    raise RetrieverLoadError(
        f"{p} is not a retriever directory (no {RETRIEVER_CONFIG} in it or in {p / 'retriever'})"
    )


def read_retriever_meta(path: str | Path, kind: str | None = "glm") -> tuple[Path, dict[str, Any]]:
    """The retriever directory and its ``retriever.json``, checked for kind (``None``: any kind this
    hoprag reads: ``glm`` or ``gnn``), format and weights."""
    directory = resolve_retriever_dir(path)
    try:
        meta = json.loads((directory / RETRIEVER_CONFIG).read_text())
    except json.JSONDecodeError as exc:
        raise RetrieverLoadError(f"{directory / RETRIEVER_CONFIG} is not valid JSON: {exc}") from exc
    if not isinstance(meta, dict):
        raise RetrieverLoadError(f"{directory / RETRIEVER_CONFIG} does not hold a JSON object")
    wanted = RETRIEVER_KINDS if kind is None else (kind,)
    if meta.get("format_version") != FORMAT_VERSION or meta.get("kind") not in wanted:
        readable = " or ".join(f"{k}/{FORMAT_VERSION}" for k in wanted)
        raise RetrieverLoadError(
            f"{directory}: retriever format {meta.get('kind')}/{meta.get('format_version')}, "
            f"this hoprag reads {readable} here"
        )
    if not (directory / WEIGHTS).is_file():
        raise RetrieverLoadError(f"{directory} has no {WEIGHTS}; re-export the retriever")
    return directory, meta


@contextmanager
def replace_directory(out_dir: Path) -> Iterator[Path]:
    """A temporary directory beside ``out_dir`` to write a retriever into; when the block finishes
    without error it replaces ``out_dir`` (so a failed export leaves the previous one intact)."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".retriever-", dir=out_dir.parent))
    try:
        yield tmp
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
