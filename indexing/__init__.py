"""Corpus → KG index with Ray Data: LLM OpenIE, parsing, normalization, synonym edges, atomic writes."""
