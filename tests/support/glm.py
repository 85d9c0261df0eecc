"""Building GLM examples on the ``glm_index`` fixture."""

from __future__ import annotations

from hoprag.glm.data import build_example
from hoprag.glm.sampler import SamplerConfig


def ember_example(
    index, tokenizer, embedder, seeds=("the ember road",), supporting=("mira castell", "dornwick")
):
    q = "Where was the star of The Ember Road born?"
    return build_example(
        index,
        q,
        seeds,
        embedder.encode([q])[0],
        tokenizer,
        SamplerConfig(max_triplets=10),
        supporting_entities=supporting,
    )
