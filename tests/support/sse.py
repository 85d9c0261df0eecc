"""Server-Sent Events as the tests read them: ``(event, data)`` pairs from the raw stream.

Parsed by the rules of the HTML standard's event-stream format, so that a test checks what a
browser's ``EventSource`` would see: a blank line ends an event; ``:`` starts a comment; a field's
value loses one leading space; several ``data`` lines join with newlines; an event without a
``data`` line, or one that the stream ends before its blank line, is not delivered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator


def sse_events(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """``(event, data)`` of each event (``message`` when unnamed), from lines without their line
    endings (``httpx.Response.iter_lines()``), yielded as each event ends: a test can time arrivals
    or close the stream after the first token."""
    event, data = "message", []
    for line in lines:
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)


def sse_events_in(body: str) -> list[tuple[str, str]]:
    """``(event, data)`` of each event in a whole response body (see :func:`sse_events`)."""
    # The format's line endings only: str.splitlines would also split data at U+2028 and the like,
    # which the app's JSON (ensure_ascii=False) may hold.
    return list(sse_events(re.split(r"\r\n|\r|\n", body)))
