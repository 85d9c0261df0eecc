"""tests/support/sse.py, the Server-Sent Events parser the serving tests share."""

from __future__ import annotations

from collections.abc import Iterator

from tests.support.sse import sse_events, sse_events_in


def test_events_are_split_at_blank_lines_with_comments_and_one_leading_space_dropped() -> None:
    body = ': ping\r\nevent: stage\r\ndata: {"a": 1}\r\n\r\ndata:x\r\ndata:  y\r\n\r\nevent: token\r\n\r\n'
    # The last block has no data: EventSource delivers nothing for it.
    assert sse_events_in(body) == [("stage", '{"a": 1}'), ("message", "x\n y")]


def test_data_keeps_unicode_line_separators_and_an_unended_event_is_not_delivered() -> None:
    assert sse_events_in("data: a\u2028b\n\nevent: answer\ndata: cut off") == [("message", "a\u2028b")]


def test_lines_are_parsed_lazily() -> None:
    def lines() -> Iterator[str]:
        yield from ["event: token", "data: first", ""]
        raise AssertionError("read past the first event")

    assert next(sse_events(lines())) == ("token", "first")
