"""HTTP schemas of the QA ingress (pydantic, with field descriptions for the OpenAPI docs).

Handlers live in :mod:`serving.deployments.ingress`; these models are the contract.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

# The OpenAI protocol's own models (messages, content parts, responses) are shared with hoprag's
# LLM server: hoprag.llm.openai_schemas.
from hoprag.llm.openai_schemas import ChatRequestBase

MAX_QUESTION_CHARS = 2000
MAX_TOP_K = 50


class QARequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(
        min_length=1, max_length=MAX_QUESTION_CHARS, description="The question, in natural language."
    )
    mode: Literal["retrieve", "plan"] = Field(
        default="retrieve",
        description="retrieve: single-shot GLM-RAG (one retrieval, one LLM call); plan: the PAI-2 planner "
        "with the GLM retriever as one of its traversals.",
    )
    top_k: int = Field(default=5, ge=1, le=MAX_TOP_K, description="Documents to return.")
    return_trace: bool = Field(
        default=False, description="Include the full trace (plans, steps, clue queries)."
    )
    index: str | None = Field(
        default=None,
        description="Which served index answers (GET /v1/indexes lists them); default: the app's "
        "default_index. An unknown name is a 404 listing the served names.",
    )
    stream: bool = Field(
        default=False,
        description="Answer with Server-Sent Events: `stage` events as the pipeline runs, `token` events "
        "as the answer is generated, then `answer` (this route's usual body) or `error`.",
    )
    evidence_graph: bool = Field(
        default=False,
        description="Include `evidence_graph`: the answer's triples (the 50 best) laid out and drawn as SVG, "
        "seeds and the seed-to-answer paths marked, coloured by plan step (what the playground at `/` shows).",
    )

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the question is blank")
        return value


class DocumentOut(BaseModel):
    doc_id: int
    title: str
    score: float = Field(description="Higher is better; comparable within one response only.")


class TripleOut(BaseModel):
    head: str
    relation: str
    tail: str
    score: float
    source: str = Field(description="The traversal or retriever that found the triple.")


class GraphNodeOut(BaseModel):
    entity: str
    step: int | None = Field(description="The plan step (0-based) that found the entity; null: none.")
    seed: bool = Field(description="A seed entity of a step (linked from its query).")
    answer: bool = Field(description="The entity is the answer (or named in it).")
    top: bool = Field(description="Among the entities of the highest-scored triples.")


class GraphEdgeOut(BaseModel):
    head: str
    relation: str
    tail: str
    step: int | None = Field(description="The plan step whose clue queries found the triple; null: none.")
    on_path: bool = Field(description="On a shortest path from a seed to the answer entity.")


class EvidenceGraphOut(BaseModel):
    svg: str = Field(
        description='A standalone SVG: `<g class="node" data-entity>` per entity, `<g class="edge" '
        'data-relation data-head data-tail>` per triple and a `<text class="edge-label">` per drawn '
        "relation label, placed where it covers no other label (all text escaped)."
    )
    nodes: list[GraphNodeOut]
    edges: list[GraphEdgeOut]
    paths: list[list[str]] = Field(description="The highlighted seed-to-answer paths, as entity names.")
    hidden_labels: int = Field(
        default=0,
        description="Relation labels left out of the SVG where every place for them was crowded (each "
        "edge keeps its relation in its tooltip and in `edges`).",
    )
    step_colours: dict[str, str] = Field(
        description="Plan step (0-based, as a string) → its colour in the SVG."
    )


class DocumentText(BaseModel):
    index: str = Field(description="The served index the document is in.")
    doc_id: int
    title: str
    text: str = Field(description="The passage as indexed.")


class QAResponse(BaseModel):
    request_id: str
    mode: Literal["retrieve", "plan"]
    answer: str = Field(description="The answer, or NotEnoughInfo.")
    not_enough_info: bool
    documents: list[DocumentOut] = Field(description="Ranked documents, best first.")
    triples: list[TripleOut] = Field(description="KG triples the answer was drawn from.")
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    timings: dict[str, float] = Field(description="Seconds per stage (queue, pipeline, total, ...).")
    trace: dict[str, Any] | None = Field(default=None, description="Present when return_trace was set.")
    evidence_graph: EvidenceGraphOut | None = Field(
        default=None, description="Present when evidence_graph was set."
    )


class ErrorBody(BaseModel):
    type: str
    message: str
    request_id: str
    detail: str | None = Field(
        default=None,
        description="/readyz only, and only to an authenticated caller (or with auth off): why the app "
        "is not ready (the load error).",
    )


class ErrorResponse(BaseModel):
    error: ErrorBody


class ReadyResponse(BaseModel):
    status: Literal["ready"]


class NotReadyResponse(BaseModel):
    status: Literal["loading", "failed"] = Field(
        description="loading: the index and models are still loading (or the QA deployment did not "
        "answer in time); failed: they could not be loaded."
    )
    error: ErrorBody


class ChatCompletionRequest(ChatRequestBase):
    """The subset of OpenAI's chat-completions request that hoprag honours (others are ignored)."""

    model: str = Field(
        default="hoprag",
        description="'hoprag' (retrieve mode) or 'hoprag-plan' (plan mode), optionally with ':<index>' "
        "to pick a served index (GET /v1/models lists every combination); any other name answers in "
        "retrieve mode.",
    )
    index: str | None = Field(
        default=None,
        description="Which served index answers (overrides a ':<index>' model suffix); default: the "
        "app's default_index.",
    )


# -- indexes and document updates -----------------------------------------------------------------
class IndexMemory(BaseModel):
    qa_replica_rss_bytes: int | None = Field(description="Resident memory of the QA replica that answered.")
    retriever_replica_rss_bytes: int | None = Field(
        description="Resident memory of one Retriever replica of this index (null: it did not answer in 5 s)."
    )


class IndexInfo(BaseModel):
    name: str
    default: bool = Field(description="Requests without `index` are answered from this one.")
    status: str = Field(description="ready, loading, failed, or unreachable.")
    retriever: str = Field(description="'dense' or the retriever directory.")
    snapshot: str | None = Field(description="The index snapshot the answering replica serves.")
    documents: int | None = None
    entities: int | None = None
    triples: int | None = None
    memory: IndexMemory | None = Field(
        default=None, description="Per replica; replicas of one index share nothing."
    )


class IndexList(BaseModel):
    default: str
    indexes: list[IndexInfo]


class DocumentIn(BaseModel):
    """One document of an upload (JSON: a list of these, or {"documents": [...]}; JSONL: one per line)."""

    model_config = ConfigDict(extra="forbid")

    title: str = Field(
        min_length=1, max_length=500, description="Unique within the index; a known title is replaced."
    )
    text: str = Field(min_length=1, description="The passage text.")

    @field_validator("title", "text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("is blank")
        return value


class DocumentUpload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    documents: list[DocumentIn] = Field(min_length=1)


JobState = Literal["queued", "running", "succeeded", "failed"]


class JobStatus(BaseModel):
    """A document update job (``GET /v1/jobs/{id}``)."""

    job_id: str
    index: str
    action: Literal["add", "delete"]
    state: JobState
    documents: int = Field(description="Documents uploaded (add) or titles removed (delete).")
    submitted_at: float = Field(description="Unix time.")
    started_at: float | None = None
    finished_at: float | None = None
    snapshot: str | None = Field(default=None, description="The snapshot the job wrote (when succeeded).")
    live: bool = Field(
        default=False,
        description="Whether the index's QA replica that answered this status request serves the job's "
        "snapshot (or a later one): the update is visible in answers.",
    )
    summary: dict[str, Any] | None = Field(
        default=None, description="The index build summary (when succeeded)."
    )
    error: str | None = Field(default=None, description="Why it failed; the served snapshot is unchanged.")
