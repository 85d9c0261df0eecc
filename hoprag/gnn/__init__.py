"""GFM-RAG's GNN retriever (a query-dependent NBFNet) as a baseline next to the GLM."""
