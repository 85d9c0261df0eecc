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
    """Refuse an index or retriever that cannot be loaded, without loading them: the index's
    manifest and the fast checksum check of its snapshot (small files hashed, large ones by size
    and sampled chunks: a few MB read), the retriever's metadata files.

    The builder runs before Serve touches any replica, so a roll-out to a mistyped, half-copied or
    corrupted path fails here and the running version keeps serving; past this point Serve would
    already have stopped old replicas for new ones that can never start.
    """
    from hoprag.glm.artifact import RetrieverLoadError, read_retriever_meta
    from hoprag.kg.store import KGIndexError, read_manifest, verify_snapshot

    index = Path(settings.index)
    try:
        verify_snapshot(index, read_manifest(index), "fast")
    except KGIndexError as exc:
        raise ValueError(f"QA app: index: {exc}") from exc
    if settings.retriever != "dense":
        try:
            read_retriever_meta(settings.retriever, kind=None)  # GLM or GNN
        except RetrieverLoadError as exc:
            raise ValueError(f"QA app: retriever: expected 'dense' or a retriever directory; {exc}") from exc


def build_app(args: dict[str, Any] | QAAppSettings) -> Application:
    """Compose LLM, Retriever, QA and the ingress with ``.bind()`` after :func:`check_sources`
    (no model or index is loaded here)."""
    from serving.deployments.ingress import QAIngress
    from serving.deployments.llm import LLMDeployment
    from serving.deployments.qa import QADeployment
    from serving.deployments.retriever import RetrieverDeployment

    settings = args if isinstance(args, QAAppSettings) else QAAppSettings.model_validate(args)
    check_sources(settings)
    llm = LLMDeployment.options(**settings.llm_deployment.options()).bind(settings.llm)
    retriever = RetrieverDeployment.options(**settings.retriever_deployment.options()).bind(
        settings.index, settings.retriever, settings.batching
    )
    qa = QADeployment.options(**settings.qa.options()).bind(settings, llm, retriever)
    return QAIngress.options(**settings.ingress.options()).bind(qa, settings)
