"""Choosing a TCP port to hand to another process (a Ray head, a Serve proxy) before it binds.

The usual trick, binding port 0 and closing the socket, returns a port from the kernel's ephemeral
range: free at that moment, but the kernel may hand it to any outgoing connection (Ray's own
processes open many) before the other process binds it, and that process then fails with "Address
already in use". Once in CI a Ray head's client server lost its port that way and the whole head
exited. Ports below the ephemeral range are only ever taken by a deliberate bind, so a port chosen
there stays free unless someone else picks the same one.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LINUX_DEFAULT_EPHEMERAL_RANGE = (32768, 60999)
# `ray start` gives its workers ports 10002-19999; a chosen port must not be one of them.
RAY_MAX_WORKER_PORT = 19999


def ephemeral_port_range() -> tuple[int, int]:
    """The kernel's range for outgoing connections' local ports (Linux's default elsewhere)."""
    try:
        low, high = EPHEMERAL_RANGE_FILE.read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return LINUX_DEFAULT_EPHEMERAL_RANGE


def port_is_free(port: int) -> bool:
    """Whether ``port`` can be bound on every interface now."""
    with socket.socket() as s:
        try:
            s.bind(("", port))
        except OSError:
            return False
        return True


def pick_free_port(taken: set[int] | None = None) -> int:
    """A port free on every interface, above Ray's worker ports and below the ephemeral range.

    ``taken`` holds ports already chosen for the same launch; the result is added to it, so
    several ports picked in a row differ even before any of them is bound.
    """
    taken = set() if taken is None else taken
    low, _ = ephemeral_port_range()
    first = RAY_MAX_WORKER_PORT + 1
    end = max(low, first + 1000)  # a kernel whose ephemeral range starts low still leaves 1000
    candidates = list(range(first, end))
    random.shuffle(candidates)
    for port in candidates:
        if port not in taken and port_is_free(port):
            taken.add(port)
            return port
    raise RuntimeError(f"no free TCP port between {first} and {end - 1}")
