"""Ray Serve: the retriever, the LLM and the QA pipeline (PAI-2 planner / single-shot GLM-RAG)
as autoscaled deployments behind one FastAPI ingress.

``serving.builder:build_app`` is the typed app builder that ``serve run`` / ``serve deploy`` and
``hoprag serve`` use; ``serving/config/*.yaml`` are ready Serve configs. Nothing here loads a model
or reads the environment at import time.
"""
