"""``hoprag bench NAME``: one module per benchmark (``benchmarks/NAME.py``, ``-`` as ``_``), one
shared harness (:mod:`benchmarks.harness`: timing with warm-up, baselines timed in the same run,
the run's provenance, JSON and table output).

A layer above the stages (docs/architecture.md): benchmarks import the core and the stages they
measure; only the command layer imports them, and only when that benchmark runs.
"""
