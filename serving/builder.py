"""The typed app builder: ``QAAppSettings`` → the bound Serve application.

Used by ``serve run serving.builder:build_app index=... retriever=...``, by the Serve config YAMLs
in ``serving/config/`` (``import_path: serving.builder:build_app``, ``args: {...}``) and by
``hoprag serve``.
"""

from __future__ import annotations

from typing import Any

from ray.serve import Application

from serving.settings import QAAppSettings


def build_app(args: dict[str, Any] | QAAppSettings) -> Application:
    """Compose LLM, Retriever, QA and the ingress with ``.bind()`` (nothing is loaded here)."""
    from serving.deployments.ingress import QAIngress
    from serving.deployments.llm import LLMDeployment
    from serving.deployments.qa import QADeployment
    from serving.deployments.retriever import RetrieverDeployment

    settings = args if isinstance(args, QAAppSettings) else QAAppSettings.model_validate(args)
    llm = LLMDeployment.options(**settings.llm_deployment.options()).bind(settings.llm)
    retriever = RetrieverDeployment.options(**settings.retriever_deployment.options()).bind(
        settings.index, settings.retriever, settings.batching
    )
    qa = QADeployment.options(**settings.qa.options()).bind(settings, llm, retriever)
    return QAIngress.options(**settings.ingress.options()).bind(qa, settings)
