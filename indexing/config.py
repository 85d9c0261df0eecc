"""The indexing stage's config (one YAML file, CLI overrides via ``--set key=value``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from hoprag.config import StrictModel
from hoprag.embedding import EmbedderConfig
from hoprag.linking.config import LinkingConfig
from hoprag.llm.factory import LLMBackendConfig
from hoprag.ray_runtime import RayConfig
from hoprag.vectorsearch import AnnBuildConfig


class ExtractionConfig(StrictModel):
    """How the LLM OpenIE stage runs on Ray Data."""

    mode: Literal["one_step", "two_step"] = Field(
        default="one_step",
        description="one_step: one triples prompt per passage, entities = triple arguments (fastest on CPU); "
        "two_step: a NER call, then a triples call (as GFM-RAG/HippoRAG do; better with strong LLMs).",
    )
    batch_size: int = Field(default=16, ge=1, description="Documents per Ray Data batch (one LLM batch).")
    concurrency: int = Field(default=1, ge=1, description="LLM actors (model replicas) in the actor pool.")
    num_cpus: float = Field(
        default=1.0, gt=0, description="CPUs reserved per LLM actor (fractional is fine)."
    )
    num_gpus: float = Field(default=0.0, ge=0, description="GPUs per LLM actor (vLLM/GPU backends).")
    max_chunk_chars: int = Field(
        default=1200,
        ge=200,
        description="Longer documents are split at sentence boundaries into passages of "
        "at most this many characters; each passage is one extraction prompt.",
    )
    max_chunks_per_document: int = Field(
        default=32,
        ge=1,
        description="Passages beyond this many per document are not extracted (counted as "
        "'truncated'), so one huge document cannot stall the job.",
    )
    max_new_tokens: int = Field(default=192, ge=16, description="Generation budget per passage.")


class SynonymConfig(StrictModel):
    """``equivalent`` edges between entities whose names embed close together (GFM-RAG's rule)."""

    enabled: bool = True
    threshold: float = Field(
        default=0.8,
        gt=0,
        le=1,
        description="Minimum cosine similarity, normalized by self-similarity (GFM-RAG).",
    )
    top_k: int = Field(default=100, ge=1, description="Nearest neighbours examined per entity.")


class MemoryGraphConfig(StrictModel):
    """The PAI-1 memory graph built beside the triple KG from the same extraction (no LLM call):
    thesis vertices (one per statement of a passage, joining the entities it mentions) and episodic
    vertices (the passages)."""

    theses: bool = Field(
        default=True,
        description="Build thesis vertices (theses.parquet + their vectors); false: triples and documents only.",
    )
    dedup_threshold: float = Field(
        default=0.95,
        gt=0,
        le=1,
        description="Statements naming the same entities whose vectors are at least this cosine-similar are "
        "one thesis (dedup by meaning; 1.0 only merges identical texts), stated by all their passages.",
    )
    min_chars: int = Field(default=16, ge=1, description="Shorter sentences are not theses.")
    max_chars: int = Field(
        default=400, ge=32, description="Longer sentences are cut at a word boundary to this many characters."
    )


class QuestionLinkingConfig(LinkingConfig):
    """How benchmark questions are linked to KG entities (query-time linking of the index reuses
    these settings: :class:`hoprag.linking.linker.QuestionLinker`)."""

    batch_size: int = Field(default=32, ge=1, description="Questions per Ray Data batch.")


class IndexConfig(StrictModel):
    """Everything ``hoprag index`` needs besides the input and output paths."""

    llm: LLMBackendConfig = Field(default_factory=LLMBackendConfig)
    embedder: EmbedderConfig = Field(default_factory=EmbedderConfig)
    extraction: ExtractionConfig = Field(default_factory=ExtractionConfig)
    synonyms: SynonymConfig = Field(default_factory=SynonymConfig)
    memory: MemoryGraphConfig = Field(default_factory=MemoryGraphConfig)
    questions: QuestionLinkingConfig = Field(default_factory=QuestionLinkingConfig)
    ray: RayConfig = Field(default_factory=RayConfig)
    vectors: AnnBuildConfig = Field(
        default_factory=AnnBuildConfig, description="Which vector matrices get an ANN index in the snapshot."
    )
