"""An embedder wrapper that records every text it embeds (to check what a build re-embeds)."""

from __future__ import annotations

from typing import Any


class CountingEmbedder:
    """Embeds with ``embedder`` and keeps the texts it was asked for in ``seen``."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.model_id, self.dim = embedder.model_id, embedder.dim
        self.seen: list[str] = []

    def encode(self, texts):
        self.seen.extend(texts)
        return self.embedder.encode(texts)
