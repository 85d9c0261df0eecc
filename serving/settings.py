"""Typed arguments of the QA app (what ``serve run serving.builder:build_app`` takes as ``args``)."""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from hoprag.config import StrictModel
from hoprag.qa.config import QASettings
from hoprag.retrieval.base import DEFAULT_RETRIEVER


class AutoscalingSettings(StrictModel):
    min_replicas: int = Field(default=1, ge=0)
    max_replicas: int = Field(default=2, ge=1)
    target_ongoing_requests: float = Field(
        default=2.0, gt=0, description="Per replica; above it Serve scales up."
    )
    upscale_delay_s: float = Field(default=3.0, ge=0)
    downscale_delay_s: float = Field(default=30.0, ge=0)

    def to_serve(self) -> dict[str, object]:
        return {
            "min_replicas": self.min_replicas,
            "initial_replicas": max(self.min_replicas, 1),
            "max_replicas": self.max_replicas,
            "target_ongoing_requests": self.target_ongoing_requests,
            "upscale_delay_s": self.upscale_delay_s,
            "downscale_delay_s": self.downscale_delay_s,
        }


class DeploymentSettings(StrictModel):
    """Replica settings of one deployment (Serve's own names)."""

    autoscaling: AutoscalingSettings = Field(default_factory=AutoscalingSettings)
    max_ongoing_requests: int = Field(default=8, ge=1, description="Concurrent requests per replica.")
    max_queued_requests: int = Field(
        default=32, ge=-1, description="Queued per caller before overload answers 503 (-1: unbounded)."
    )
    num_cpus: float = Field(default=0.5, ge=0)
    num_gpus: float = Field(default=0, ge=0)
    health_check_period_s: float = Field(default=10.0, gt=0)
    health_check_timeout_s: float = Field(default=30.0, gt=0)
    env_vars: dict[str, str] = Field(
        default_factory=dict, description="Extra environment of the replicas (e.g. a token from a secret)."
    )

    def options(self) -> dict[str, object]:
        actor: dict[str, object] = {"num_cpus": self.num_cpus, "num_gpus": self.num_gpus}
        if self.env_vars:
            actor["runtime_env"] = {"env_vars": dict(self.env_vars)}
        return {
            "autoscaling_config": self.autoscaling.to_serve(),
            "max_ongoing_requests": self.max_ongoing_requests,
            "max_queued_requests": self.max_queued_requests,
            "ray_actor_options": actor,
            "health_check_period_s": self.health_check_period_s,
            "health_check_timeout_s": self.health_check_timeout_s,
        }


class BatchingSettings(StrictModel):
    enabled: bool = Field(default=True, description="Batch concurrent retrievals with @serve.batch.")
    max_batch_size: int = Field(default=8, ge=1)
    batch_wait_timeout_s: float = Field(default=0.01, ge=0)


class AuthSettings(StrictModel):
    token_env: str | None = Field(
        default=None,
        description="Name of the environment variable (or mounted secret) holding the bearer token; "
        "None disables auth. Read when the ingress replica starts, never at import.",
    )


class RequestLimits(StrictModel):
    """Bounds on what the ingress accepts from an HTTP caller (checked before any work is queued)."""

    max_body_bytes: int = Field(
        default=1_048_576,
        ge=1,
        description="Largest request body, in bytes, on every route: a larger one is answered 413 "
        "before it is parsed (by its Content-Length, or by counting the bytes of a chunked body).",
    )
    max_chat_messages: int = Field(
        default=64, ge=1, description="Most messages in one chat-completions request (more: 422)."
    )
    max_message_chars: int = Field(
        default=16_000,
        ge=1,
        description="Most characters in one chat message's content (its text parts together; more: 422).",
    )


INDEX_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
DEFAULT_INDEX_NAME = "default"


class ServedIndex(StrictModel):
    """One named index the app serves, with its retriever; each gets its own QA and Retriever
    deployments (``QA-<name>``, ``Retriever-<name>``), all sharing the one LLM deployment."""

    name: str = Field(
        description='What requests select it by (`"index": name`); lower-case letters, digits, '
        "'-' and '_', up to 63 characters (it is part of deployment names and URLs)."
    )
    index: str = Field(description="KG index directory (local path or a mounted volume).")
    retriever: str = Field(
        default=DEFAULT_RETRIEVER,
        description="'dense', a GLM / GNN retriever (or training run) directory, or several joined by '+' "
        "(rankings fused, e.g. 'runs/glm+dense'); default: the shipped GLM fused with dense.",
    )

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        if not INDEX_NAME.match(value):
            raise ValueError(
                f"index name {value!r}: use lower-case letters, digits, '-' and '_' (at most 63, "
                "starting with a letter or digit)"
            )
        return value


class IndexUpdateSettings(StrictModel):
    """Live document updates (``POST/DELETE /v1/indexes/{name}/documents``): limits and the job."""

    enabled: bool = Field(default=True, description="Accept document uploads and deletions.")
    allow_without_auth: bool = Field(
        default=False,
        description="Accept updates with auth off. By default an app without a bearer token "
        "(auth.token_env) refuses them (403): anyone who can reach it could rewrite the index.",
    )
    max_upload_bytes: int = Field(
        default=16 * 1_048_576,
        ge=1,
        description="Largest upload body, in bytes (other routes keep limits.max_body_bytes); more: 413.",
    )
    max_documents: int = Field(default=1000, ge=1, description="Most documents in one upload (more: 422).")
    max_document_chars: int = Field(
        default=1_000_000, ge=1, description="Longest document text, in characters (longer: 422)."
    )
    job_num_cpus: float = Field(
        default=0.5,
        ge=0,
        description="CPUs of the Ray task that runs an update (the index's extraction runs under it "
        "with the index's recorded LLM and Ray Data settings).",
    )
    watch_interval_s: float = Field(
        default=2.0,
        ge=0,
        description="How often QA and Retriever replicas look at each index's manifest for a new "
        "snapshot (written by an update job, or by `hoprag index --add/--delete` on the same path) "
        "and swap to it after loading it; 0 turns watching off.",
    )
    keep_jobs: int = Field(default=200, ge=1, description="Finished jobs whose status stays queryable.")


class QAAppSettings(QASettings):
    """Everything the QA app needs: ``index`` (one index) or ``indexes`` (several, by name); the
    rest has defaults. ``llm``, ``planner`` and ``retrieve`` are the QA settings that ``hoprag ask``
    and evaluation take too."""

    index: str | None = Field(
        default=None,
        description="KG index directory (local path or a mounted volume), served as the index named "
        "'default'; or give `indexes` instead.",
    )
    retriever: str = Field(
        default=DEFAULT_RETRIEVER,
        description="'dense', a GLM / GNN retriever (or training run) directory, or several joined by '+' "
        "(rankings fused, e.g. 'runs/glm+dense'); with `index`; default: the shipped GLM fused with dense.",
    )
    indexes: list[ServedIndex] = Field(
        default_factory=list,
        description="Several named indexes, each with its retriever (instead of `index`/`retriever`).",
    )
    default_index: str | None = Field(
        default=None,
        description="The index a request without `index` is answered from (default: the first listed).",
    )
    updates: IndexUpdateSettings = Field(default_factory=IndexUpdateSettings)
    request_timeout_s: float = Field(
        default=120.0, gt=0, description="Per request; past it the answer is 504."
    )
    auth: AuthSettings = Field(default_factory=AuthSettings)
    limits: RequestLimits = Field(
        default_factory=RequestLimits, description="Request size bounds enforced by the ingress."
    )
    batching: BatchingSettings = Field(default_factory=BatchingSettings)
    load_in_background: bool = Field(
        default=False,
        description="Load a QA replica's index and models in a background thread: the replica starts at "
        "once and /readyz answers 503 until loaded. Default (false): the replica's constructor loads "
        "them, so Serve routes to it only when it can answer and rolling updates drop no requests.",
    )
    startup_delay_s: float = Field(
        default=0.0,
        ge=0,
        description="Wait before a QA replica loads its index and models (staggered rollouts); the "
        "replica's start_loading() method ends the wait early.",
    )
    ingress: DeploymentSettings = Field(
        default_factory=lambda: DeploymentSettings(
            max_ongoing_requests=64, max_queued_requests=64, num_cpus=0.1
        )
    )
    qa: DeploymentSettings = Field(
        default_factory=lambda: DeploymentSettings(max_ongoing_requests=4, num_cpus=0.5)
    )
    retriever_deployment: DeploymentSettings = Field(default_factory=lambda: DeploymentSettings(num_cpus=0.5))
    llm_deployment: DeploymentSettings = Field(
        default_factory=lambda: DeploymentSettings(
            max_ongoing_requests=4, num_cpus=1.0, autoscaling=AutoscalingSettings(max_replicas=1)
        )
    )

    @model_validator(mode="after")
    def _one_way_to_name_indexes(self) -> QAAppSettings:
        if (self.index is None) == (not self.indexes):
            raise ValueError("give either `index` (one index) or `indexes` (a list of named indexes)")
        if self.indexes and "retriever" in self.model_fields_set:
            raise ValueError("`retriever` goes with `index`; with `indexes` each entry names its own")
        names = [served.name for served in self.served_indexes]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise ValueError(f"index names must be unique; repeated: {', '.join(duplicated)}")
        if self.default_index is not None and self.default_index not in names:
            raise ValueError(f"default_index {self.default_index!r} is not one of {', '.join(names)}")
        return self

    @property
    def served_indexes(self) -> list[ServedIndex]:
        """The indexes served, by name (one named 'default' when the app was given ``index``)."""
        if self.indexes:
            return list(self.indexes)
        assert self.index is not None  # the validator guarantees one of the two
        return [ServedIndex(name=DEFAULT_INDEX_NAME, index=self.index, retriever=self.retriever)]

    @property
    def default_index_name(self) -> str:
        return self.default_index or self.served_indexes[0].name
