"""Ports handed to another process are chosen where no outgoing connection can take them first."""

from __future__ import annotations

import socket

import pytest

from hoprag import ports
from hoprag.ports import RAY_MAX_WORKER_PORT, ephemeral_port_range, pick_free_port, port_is_free


def test_a_picked_port_is_free_and_outside_the_ephemeral_range_and_rays_worker_ports() -> None:
    low, high = ephemeral_port_range()
    assert 0 < low <= high
    taken: set[int] = set()
    picked = [pick_free_port(taken) for _ in range(20)]
    assert len(set(picked)) == 20 and taken == set(picked)  # distinct before any is bound
    assert all(RAY_MAX_WORKER_PORT < p < max(low, RAY_MAX_WORKER_PORT + 1001) for p in picked)
    assert all(port_is_free(p) for p in picked)


def test_a_bound_port_is_not_free_and_is_never_picked(monkeypatch) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", pick_free_port()))
        port = held.getsockname()[1]
        assert not port_is_free(port)  # bound on one interface: not free on all
        monkeypatch.setattr(ports.random, "shuffle", lambda xs: xs.sort(key=lambda p: p != port))
        assert pick_free_port() != port  # the held port comes first and is skipped


def test_without_the_kernels_range_file_linux_defaults_apply(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE_FILE", tmp_path / "missing")
    assert ephemeral_port_range() == (32768, 60999)
    (tmp_path / "odd").write_text("not numbers\n")
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE_FILE", tmp_path / "odd")
    assert ephemeral_port_range() == (32768, 60999)


def test_when_every_candidate_is_taken_the_error_names_the_range(monkeypatch) -> None:
    monkeypatch.setattr(ports, "port_is_free", lambda port: False)
    with pytest.raises(RuntimeError, match=r"no free TCP port between 20000 and \d+"):
        pick_free_port()
