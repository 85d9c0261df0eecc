"""hoprag: multi-hop question answering over knowledge graphs on Ray.

The ``hoprag`` package is the shared core (configs, LLM and embedding backends, the KG index,
prompts and parsers, data generators, CLI). It never starts Ray or loads a model at import time.
"""

__version__ = "0.1.0"
