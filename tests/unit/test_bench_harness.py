"""The benchmarks' one home and shared harness: timing with warm-up, turns taken against a baseline,
provenance, JSON and table output."""

from __future__ import annotations

import argparse
import importlib
import json
import re
from pathlib import Path

import pytest

from benchmarks.harness import Timing, interleaved, provenance, publish, ratios, time_call
from hoprag_cli.bench import BENCHMARKS

ROOT = Path(__file__).resolve().parents[2]


def test_time_call_warms_up_untimed_then_times_each_call() -> None:
    calls: list[int] = []
    timing = time_call(lambda: calls.append(1), warmup=2, repeat=3)
    assert len(calls) == 5 and len(timing.seconds) == 3
    assert timing.best <= timing.median and timing.to_dict()["runs"] == 3
    with pytest.raises(ValueError, match="repeat"):
        time_call(lambda: None, repeat=0)


def test_interleaved_variants_take_turns_and_ratios_are_to_the_first() -> None:
    order: list[str] = []
    timings = interleaved(
        {"base": lambda: order.append("a"), "new": lambda: order.append("b")}, warmup=1, repeat=2
    )
    assert order == ["a", "b"] * 3  # warm-up round, then two timed rounds, always in turn
    assert set(timings) == {"base", "new"} and all(len(t.seconds) == 2 for t in timings.values())
    assert ratios({"base": Timing((2.0, 2.0)), "new": Timing((1.0, 1.0))}) == {"base": 1.0, "new": 0.5}


def test_provenance_records_the_command_that_reruns_it() -> None:
    record = provenance("index", ["bench", "index", "--docs", "8", "--set", "a=b c"])
    assert record["bench"] == "index"
    assert record["command"] == "hoprag bench index --docs 8 --set 'a=b c'"
    assert record["machine"] and record["hoprag"] and record["date"]


def test_publish_prints_one_json_line_or_a_table_and_keeps_the_report(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.argv", ["hoprag", "bench", "serve", "--seconds", "5"])
    results = {"qps": 12.5}
    args = argparse.Namespace(json=True, workdir=tmp_path / "work")
    report = publish("serve", results, args, table=lambda r: [f"QPS {r['qps']}"])
    line = capsys.readouterr().out.strip()
    assert "\n" not in line and json.loads(line) == report
    assert report["qps"] == 12.5 and report["bench"] == "serve"
    assert json.loads((tmp_path / "work" / "serve-bench.json").read_text()) == report
    publish("serve", results, argparse.Namespace(json=False), table=lambda r: [f"QPS {r['qps']}"])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "hoprag bench serve --seconds 5" and out[-1] == "QPS 12.5"


def test_every_benchmark_lives_in_benchmarks_under_its_command_name() -> None:
    """`hoprag bench NAME` runs benchmarks/NAME.py (- as _); no stage keeps a benchmark module."""
    for name, (module, function) in BENCHMARKS.items():
        assert module == f"benchmarks.{name.replace('-', '_')}", name
        assert callable(getattr(importlib.import_module(module), function))
    stray = [
        str(p.relative_to(ROOT))
        for package in (
            "hoprag",
            "indexing",
            "training",
            "evaluation",
            "serving",
            "distillation",
            "cluster",
            "synthetic",
        )
        for p in (ROOT / package).rglob("*.py")
        if re.search(r"(^|_)bench(_|$)", p.stem)
    ]
    assert not stray, f"benchmark modules outside benchmarks/: {stray}"
