"""What the command modules share: the config arguments and the one-line user error."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path


class UserError(Exception):
    """A problem with the user's input or files: printed as ``hoprag: MESSAGE``, exit status 2."""


def add_config_args(p: argparse.ArgumentParser) -> None:
    """``--config FILE.yaml`` and repeatable ``--set KEY=VALUE`` for a stage's typed config."""
    p.add_argument("--config", type=Path, default=None, help="YAML config for this stage")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field, e.g. --set extraction.batch_size=8 (repeatable)",
    )


def key_values(pairs: Sequence[str], flag: str) -> dict[str, str]:
    """``["A=1", "B=x"]`` → ``{"A": "1", "B": "x"}``; a pair without ``=`` is a :class:`UserError`."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UserError(f"{flag} takes KEY=VALUE, got {pair!r}")
        out[key] = value
    return out
