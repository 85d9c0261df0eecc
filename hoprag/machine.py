"""A one-line description of the machine, recorded next to every benchmark result."""

from __future__ import annotations

import os
import platform


def machine_description() -> str:
    """``"x86_64, 2 cores, 24 GiB, Python 3.11.7"``."""
    import psutil

    memory = round(psutil.virtual_memory().total / 2**30)
    return f"{platform.machine()}, {os.cpu_count()} cores, {memory} GiB, Python {platform.python_version()}"
