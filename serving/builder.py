"""The typed app builder: ``QAAppSettings`` → the bound Serve application.

Used by ``serve run serving.builder:build_app index=... retriever=...``, by the Serve config YAMLs
in ``serving/config/`` (``import_path: serving.builder:build_app``, ``args: {...}``) and by
``hoprag serve``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ray.serve import Application

from serving.settings import QAAppSettings


def check_sources(settings: QAAppSettings) -> None:
    """Refuse an index or retriever that cannot be loaded, without loading them: each index's
    manifest and the fast checksum check of its snapshot (small files hashed, large ones by size
    and sampled chunks: a few MB read), each retriever's metadata files.

    The builder runs before Serve touches any replica, so a roll-out to a mistyped, half-copied or
    corrupted path fails here and the running version keeps serving; past this point Serve would
    already have stopped old replicas for new ones that can never start.
    """
    from hoprag.kg.store import KGIndexError, read_manifest, verify_snapshot
    from hoprag.retrieval.loading import RetrieverSpecError, check_retriever_spec

    several = len(settings.served_indexes) > 1
    for served in settings.served_indexes:
        where = f"QA app: index {served.name!r}" if several else "QA app: index"
        index = Path(served.index)
        try:
            verify_snapshot(index, read_manifest(index), "fast")
        except KGIndexError as exc:
            raise ValueError(f"{where}: {exc}") from exc
        try:
            check_retriever_spec(served.retriever)  # dense, GLM or GNN directories, or A+B fused
        except RetrieverSpecError as exc:
            raise ValueError(f"{where}: {exc}") from exc


def build_app(args: dict[str, Any] | QAAppSettings) -> Application:
    """Compose the app with ``.bind()`` after :func:`check_sources` (no model or index is loaded
    here): one LLM deployment shared by all indexes; per index a Retriever and a QA deployment
    (``Retriever-<name>``, ``QA-<name>``); the update-job deployment; the ingress over them."""
    from serving.deployments.index_jobs import IndexJobs
    from serving.deployments.ingress import QAIngress
    from serving.deployments.llm import LLMDeployment
    from serving.deployments.qa import QADeployment
    from serving.deployments.retriever import RetrieverDeployment

    settings = args if isinstance(args, QAAppSettings) else QAAppSettings.model_validate(args)
    check_sources(settings)
    llm = LLMDeployment.options(**settings.llm_deployment.options()).bind(settings.llm)
    qa_by_index = {}
    for served in settings.served_indexes:
        retriever = RetrieverDeployment.options(
            name=f"Retriever-{served.name}", **settings.retriever_deployment.options()
        ).bind(
            served, settings.batching, settings.updates.watch_interval_s, settings.vector_search, settings.ppr
        )
        qa_by_index[served.name] = QADeployment.options(
            name=f"QA-{served.name}", **settings.qa.options()
        ).bind(settings, served, llm, retriever)
    jobs = IndexJobs.options(**JOBS_DEPLOYMENT).bind(settings)
    return QAIngress.options(**settings.ingress.options()).bind(qa_by_index, jobs, settings)


# One replica holds the job table (jobs of one index run one after another); the work itself runs
# in a Ray task, so the replica needs no CPU of its own.
JOBS_DEPLOYMENT: dict[str, Any] = {
    "num_replicas": 1,
    "max_ongoing_requests": 32,
    "ray_actor_options": {"num_cpus": 0},
}
