"""HTTP header values hoprag's clients act on."""

from __future__ import annotations

import email.utils
import time


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds from ``now`` (default: the current time): either delta-seconds
    (fractions tolerated) or an HTTP date (RFC 9110 §10.2.3); ``None`` when absent or unreadable,
    0 for a date already past."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)
