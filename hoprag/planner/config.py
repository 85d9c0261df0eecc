"""Typed settings of the PAI-2 planner (defaults: the paper's, plus hoprag's call savings)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from hoprag.config import StrictModel

TraversalName = Literal["beam", "water_circles", "naive", "astar", "glm"]


class BeamSearchSettings(StrictModel):
    depth: int = Field(default=3, ge=1, le=6, description="Triples per path at most.")
    max_paths: int = Field(default=10, ge=1, description="Beam width and number of paths kept.")
    alpha: float = Field(default=0.75, ge=0.0, le=1.0, description="Length normalization: cost / len**alpha.")
    min_similarity: float = Field(
        default=0.1,
        ge=-1.0,
        le=1.0,
        description="Triples less similar to the query are never walked (MiniLM cosine).",
    )


class WaterCirclesSettings(StrictModel):
    depth: int = Field(default=2, ge=1, le=4, description="Rings grown around each seed.")
    chain_quota: int = Field(
        default=25, ge=1, description="Chain triples for one seed (halved for 2, /3.5 for 3+)."
    )
    other_quota: int = Field(default=6, ge=0, description="One-hop triples per seed when no chain exists.")


class AStarSettings(StrictModel):
    max_depth: int = Field(default=4, ge=1, le=8, description="Longer paths are not returned.")
    targets: int = Field(
        default=3, ge=1, description="With one seed: paths to this many entities nearest the clue query."
    )
    max_expansions: int = Field(default=5000, ge=10, description="Vertices expanded per search at most.")


class MatchingSettings(StrictModel):
    vertices_per_entity: int = Field(default=3, ge=1, description="KG vertices matched per extracted entity.")
    dense_weight: float = Field(default=0.5, ge=0.0)
    bm25_weight: float = Field(default=0.5, ge=0.0)
    min_similarity: float = Field(
        default=0.5, ge=-1.0, le=1.0, description="Dense candidates below are ignored."
    )


class PlannerConfig(StrictModel):
    """Everything the planner does; ``PlannerConfig.paper_like()`` gives the paper's call pattern."""

    max_steps: int = Field(default=8, ge=1, le=32, description="Search steps executed at most (paper: 8).")
    max_clue_queries: int = Field(
        default=4, ge=1, le=16, description="Clue queries per step (vertex combinations)."
    )
    traversals: list[TraversalName] = Field(
        default_factory=lambda: ["beam", "naive"],
        min_length=1,
        description="Combined in order; paper best: beam + naive. 'astar': cheapest paths between the "
        "clue query's vertices (PAI-1). 'glm' needs a GLM retriever.",
    )
    theses: int = Field(
        default=5,
        ge=0,
        le=64,
        description="Memory-graph theses (statements) each traversal reads per clue query, and the most kept "
        "for a step's answer; 0 = object triples only (also what an index without theses gives).",
    )
    max_step_facts: int = Field(
        default=25,
        ge=0,
        description="Fact lines (theses, then triples) of one step-answer prompt at most, over all its clue "
        "queries: retrieve mode's 25, the size the shipped student's answer task was trained on; 0 = no cap "
        "(the paper shows each clue query's 50 triples).",
    )
    drop_episodes: bool = Field(
        default=False,
        description="Discard episodic knowledge (passages) at filtering as PAI-2 does: step answers see "
        "triples and theses only. Off: the GLM traversal's top passages are added (context_documents).",
    )
    top_triples: int = Field(
        default=50, ge=1, description="Triples kept per clue query after filtering by similarity."
    )
    naive_top_k: int = Field(default=25, ge=1)
    naive_weights: tuple[float, float] = Field(
        default=(0.7, 0.3), description="Dense, BM25 weights of the fusion."
    )
    context_documents: int = Field(
        default=3,
        ge=0,
        description="Texts of the GLM traversal's top documents added to each step-answer prompt (GLM-RAG "
        "style; as retrieve mode, and what the student's answer task was trained on); 0 = triples only "
        "(the paper's). Without a retriever there are no documents to add.",
    )
    max_document_chars: int = Field(
        default=600, ge=50, description="Each context document is cut to this length."
    )
    beam: BeamSearchSettings = Field(default_factory=BeamSearchSettings)
    water_circles: WaterCirclesSettings = Field(default_factory=WaterCirclesSettings)
    astar: AStarSettings = Field(default_factory=AStarSettings)
    matching: MatchingSettings = Field(default_factory=MatchingSettings)
    max_question_chars: int = Field(default=2000, ge=16, description="Longer questions are rejected.")

    # Preprocessing (paper default: all off).
    decompose: bool = Field(
        default=False, description="Split the question into sub-questions answered separately."
    )
    denoise: bool = Field(default=False, description="Rewrite the question without irrelevant details first.")
    enhance_question: bool = Field(default=False, description="Rewrite the question more explicitly first.")

    max_llm_calls: int | None = Field(
        default=12,
        ge=2,
        description="LLM calls one question may make (cache hits are free), whatever the backend. Before "
        "each step and each update the planner checks that it fits with a call left for the final "
        "answer (a step is priced at the most a step of the question cost so far, 2 before any); when it "
        "does not, the search stops and the answer is asked from what was found (a trace note says so). "
        "null: no limit.",
    )

    # Call economy (hoprag); paper_like() switches all of them off.
    batch_calls: bool = Field(default=True, description="Send independent prompts of a step as one batch.")
    cache_size: int = Field(
        default=4096, ge=0, description="Completions cached by (prompt, model); 0 disables."
    )
    merged_prompts: bool = Field(
        default=True,
        description="One step-answer call over all clue queries' facts instead of clue answers + summary; one "
        "update call for answerability + plan enhancement + final answer.",
    )
    dictionary_entities: bool = Field(
        default=True, description="Skip the entity-extraction call when the step names KG entities literally."
    )
    literal_clue_queries: bool = Field(
        default=True,
        description="Build clue queries by substituting matched names; call the LLM only when a mention is not literal.",
    )
    fill_placeholders: bool = Field(
        default=True,
        description="Plan enhancement by substitution: a later step's [placeholder] gets the answer of the "
        "earlier step it names without an update call (the LLM rewrites only what this cannot).",
    )
    require_citations: bool = Field(
        default=True,
        description="A step answer that none of its evidence states is recorded as found nothing, and a final "
        "answer that no step answer or cited evidence states is not given (both noted in the trace).",
    )
    question_fallback: bool = Field(
        default=False,
        description="When the plan ends without an answer and no step searched the question itself, one "
        "more step searches it whole (retrieve mode's single-shot search inside the plan; +1–2 LLM calls); "
        "its cited answer is the answer.",
    )
    skip_needless_updates: bool = Field(
        default=True, description="No update call while the remaining steps have no [placeholder] to fill."
    )

    @classmethod
    def paper_like(cls, **overrides: object) -> PlannerConfig:
        """The paper's call pattern: every sub-task its own call, no batching, no cache."""
        return cls.model_validate({**PAPER_CALL_PATTERN, **overrides})

    def with_paper_calls(self) -> PlannerConfig:
        """These settings with the paper's call pattern (for side-by-side cost comparisons)."""
        return self.model_copy(update=PAPER_CALL_PATTERN)


PAPER_CALL_PATTERN: dict[str, object] = {
    "batch_calls": False,
    "cache_size": 0,
    "merged_prompts": False,
    "dictionary_entities": False,
    "literal_clue_queries": False,
    "skip_needless_updates": False,
    "fill_placeholders": False,
    "max_llm_calls": None,  # the paper spends ~42 calls a question
}
