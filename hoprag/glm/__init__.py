"""The GLM retriever (GLM-RAG): subgraph sampling, graph-T5 encoding, entity scoring, document ranking."""
