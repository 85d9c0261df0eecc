"""A Ray node that does not come up within Ray's fixed 30 s (a loaded machine) is started again."""

from __future__ import annotations

import pytest

from hoprag.ray_runtime import SLOW_START, retry_slow_start


def test_a_slow_start_is_retried_after_cleaning_up_and_other_failures_are_not() -> None:
    calls: list[str] = []

    def slow_twice() -> str:
        calls.append("start")
        if calls.count("start") < 3:
            raise Exception(f"The current node {SLOW_START}. This could happen because ...")
        return "gcs:1234"

    assert retry_slow_start(slow_twice, lambda: calls.append("clean")) == "gcs:1234"
    assert calls == ["start", "clean", "start", "clean", "start"]

    def always_slow() -> str:
        raise Exception(f"node {SLOW_START}")

    with pytest.raises(Exception, match=SLOW_START):
        retry_slow_start(always_slow, lambda: None, attempts=2)

    broken: list[int] = []

    def other_failure() -> str:
        broken.append(1)
        raise ValueError("port in use")

    with pytest.raises(ValueError, match="port in use"):
        retry_slow_start(other_failure, lambda: None)
    assert broken == [1]  # not retried
