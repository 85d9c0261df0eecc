"""Settings of question → KG entity linking (light: read by config modules)."""

from __future__ import annotations

from pydantic import Field

from hoprag.config import StrictModel


class LinkingConfig(StrictModel):
    """How questions are linked to KG entities (recorded in the index manifest; query-time linking
    of that index uses the recorded settings)."""

    use_llm_ner: bool = Field(
        default=True, description="Ask the LLM for mentions (grounded in the question)."
    )
    use_dictionary: bool = Field(default=True, description="Match KG entity names in the question (n-grams).")
    min_link_similarity: float = Field(
        default=0.5,
        ge=-1,
        le=1,
        description="An LLM mention not found verbatim links to its nearest entity "
        "only above this cosine similarity.",
    )
