"""``serving.run.start_serve``: a Serve HTTP proxy replaced by the controller's ready check is waited for."""

from __future__ import annotations

import pytest
import ray.exceptions
from ray import serve

from serving.run import start_serve


class _DiedActor(ray.exceptions.ActorDiedError):
    def __init__(self, class_name: str) -> None:
        super().__init__()
        self.class_name = class_name

    def __str__(self) -> str:
        return f"The actor died unexpectedly before finishing this task.\n\tclass_name: {self.class_name}"


def _scripted_start(monkeypatch, outcomes: list[Exception | None]) -> list[dict]:
    calls: list[dict] = []

    def start(**kwargs):
        calls.append(kwargs)
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome

    monkeypatch.setattr(serve, "start", start)
    return calls


def test_a_proxy_killed_by_its_ready_check_is_waited_for(monkeypatch, capsys) -> None:
    calls = _scripted_start(monkeypatch, [_DiedActor("ProxyActor"), None])
    start_serve("127.0.0.1", 8123)
    assert calls == [{"http_options": {"host": "127.0.0.1", "port": 8123}}] * 2
    assert "proxy was slow to start" in capsys.readouterr().out


def test_any_other_dead_actor_is_raised(monkeypatch) -> None:
    calls = _scripted_start(monkeypatch, [_DiedActor("ServeController"), None])
    with pytest.raises(ray.exceptions.ActorDiedError, match="ServeController"):
        start_serve("127.0.0.1", 8123)
    assert len(calls) == 1


def test_a_second_failure_is_raised(monkeypatch) -> None:
    _scripted_start(monkeypatch, [_DiedActor("ProxyActor"), _DiedActor("ProxyActor")])
    with pytest.raises(ray.exceptions.ActorDiedError):
        start_serve("127.0.0.1", 8123)
