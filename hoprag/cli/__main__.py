"""Deprecated: ``python -m hoprag.cli ...`` runs ``python -m hoprag_cli ...`` (see hoprag.cli)."""

import warnings

from hoprag.cli import MOVED
from hoprag_cli.entry import main

warnings.warn(MOVED, DeprecationWarning, stacklevel=1)
raise SystemExit(main())
