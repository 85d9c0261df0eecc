"""Filesystem locations hoprag uses; read from the environment when called, never at import."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Root of hoprag's caches (converted model weights, ...): ``$HOPRAG_CACHE_DIR`` or ``~/.cache/hoprag``."""
    root = os.environ.get("HOPRAG_CACHE_DIR")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "hoprag"


# The packaged sample corpus (60 documents in the GFM-RAG raw layout) that `hoprag demo` indexes.
SAMPLE_CORPUS = Path(__file__).parent / "data" / "sample"

# The general GLM retriever shipped with hoprag (a LoRA MiniLM GLM; retriever spec and --init name
# "packaged-glm"): hoprag/data/glm/README.md says how it was trained.
PACKAGED_GLM = Path(__file__).parent / "data" / "glm"
