"""The QA app's deployments: LLM, Retriever, QA (planner + single-shot GLM-RAG), and the ingress."""
