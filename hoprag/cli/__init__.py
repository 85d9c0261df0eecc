"""Deprecated alias: the command layer is the top-level package :mod:`hoprag_cli`.

It moved out of the core so that ``hoprag`` imports no stage (docs/architecture.md). This alias
keeps ``from hoprag.cli import main`` and ``python -m hoprag.cli ...`` (the entrypoint of Ray jobs
submitted before the move) working for one release, with a warning; it is then removed.
"""

from __future__ import annotations

import warnings
from typing import Any

MOVED = "hoprag.cli moved to hoprag_cli (the `hoprag` command is unchanged); this alias will be removed"


def __getattr__(name: str) -> Any:
    import hoprag_cli

    value = getattr(hoprag_cli, name)  # AttributeError for a name the command layer never had
    warnings.warn(MOVED, DeprecationWarning, stacklevel=2)
    return value
