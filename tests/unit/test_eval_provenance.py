"""A re-run of ``hoprag eval run`` reuses stored results only while the settings that produced them
still hold; a system changed under its name is refused before Ray starts, naming what changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml

from evaluation.config import EvalConfig
from evaluation.provenance import (
    StaleResultsError,
    check_stored_results,
    provenance_path,
    verify_pair,
)
from evaluation.results import results_path
from hoprag.gnn.model import QueryNBFNet
from hoprag.gnn.retriever import save_gnn_retriever
from hoprag.gnn.settings import GNNSettings


def _gnn(path: Path, seed: int) -> Path:
    torch.manual_seed(seed)
    settings = GNNSettings(hidden_dim=16, num_layers=2)
    return save_gnn_retriever(path, QueryNBFNet(settings), settings)


def _config(out: Path, index: Path, retriever: str, **extra) -> EvalConfig:
    return EvalConfig.model_validate(
        {
            "benchmarks": [{"name": "b", "index": str(index)}],
            "systems": [
                {"name": "graph", "kind": "retrieval", "retriever": retriever},
                {"name": "rag", "kind": "qa", "pipeline": "rag", "retriever": "dense"},
            ],
            "out": str(out),
            **extra,
        }
    )


def _store_results(config: EvalConfig, system: str) -> Path:
    path = results_path(config.out, "b", system)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"id": "q1", "metrics": {"recall@2": 1.0}}) + "\n")
    return path


def _record_and_store(config: EvalConfig) -> None:
    """What a finished run leaves: each pair's provenance, then its results."""
    for system in config.systems:
        verify_pair(config, config.benchmarks[0], system)
        _store_results(config, system.name)


def test_the_same_config_reuses_and_a_larger_limit_extends(tmp_path, small_index) -> None:
    gnn = _gnn(tmp_path / "gnn", seed=0)
    config = _config(tmp_path / "eval", small_index, f"{gnn}+dense")
    _record_and_store(config)
    check_stored_results(config)
    recorded = json.loads(provenance_path(config.out, "b", "graph").read_text())
    assert set(recorded["retriever_weights"]) == {str(gnn)}  # dense has no weights of its own
    assert recorded["index"]["snapshot"] and recorded["llm"].startswith("llamacpp:qwen2.5-coder-1.5b")
    limited = config.model_copy(
        update={"benchmarks": [config.benchmarks[0].model_copy(update={"limit": 50})]}
    )
    check_stored_results(limited)  # the question limit is not a setting of the results


def test_another_retriever_under_the_same_name_is_refused(tmp_path, small_index) -> None:
    gnn = _gnn(tmp_path / "gnn", seed=0)
    other = _gnn(tmp_path / "other", seed=0)
    _record_and_store(_config(tmp_path / "eval", small_index, f"{gnn}+dense"))
    with pytest.raises(StaleResultsError) as err:
        check_stored_results(_config(tmp_path / "eval", small_index, f"{other}+dense"))
    message = str(err.value)
    assert str(results_path(tmp_path / "eval", "b", "graph")) in message
    assert f"{gnn}+dense" in message and f"{other}+dense" in message
    assert "new --out" in message and "rag.jsonl" not in message  # the unchanged pair is not named


def test_weights_retrained_in_place_are_refused(tmp_path, small_index) -> None:
    gnn = _gnn(tmp_path / "gnn", seed=0)
    config = _config(tmp_path / "eval", small_index, str(gnn))
    _record_and_store(config)
    _gnn(tmp_path / "gnn", seed=1)  # same directory, new weights
    with pytest.raises(StaleResultsError, match="retriever_weights"):
        check_stored_results(config)


def test_qa_settings_and_the_llm_count_only_where_they_are_read(tmp_path, small_index) -> None:
    gnn = _gnn(tmp_path / "gnn", seed=0)
    config = _config(tmp_path / "eval", small_index, str(gnn))
    _record_and_store(config)
    # The planner's settings do not decide a rag system's answers: still reusable.
    check_stored_results(_config(tmp_path / "eval", small_index, str(gnn), planner={"max_steps": 2}))
    with pytest.raises(StaleResultsError) as err:
        check_stored_results(
            _config(tmp_path / "eval", small_index, str(gnn), retrieve={"context_documents": 5})
        )
    assert "rag.jsonl: retrieve:" in str(err.value) and "graph.jsonl" not in str(err.value)
    # Another LLM changes the answers and the query-time linking of both systems.
    with pytest.raises(StaleResultsError) as err:
        check_stored_results(
            _config(tmp_path / "eval", small_index, str(gnn), llm={"embedded": {"adapter": None}})
        )
    assert str(err.value).count("llm: ") == 2


def test_results_from_before_provenance_are_kept_and_recorded(tmp_path, small_index, capsys) -> None:
    config = _config(tmp_path / "eval", small_index, "dense")
    for system in ("graph", "rag"):
        _store_results(config, system)
    check_stored_results(config)
    assert "no record of the settings" in capsys.readouterr().out
    assert provenance_path(config.out, "b", "graph").is_file()
    check_stored_results(config)
    assert "no record" not in capsys.readouterr().out


def test_a_changed_pair_without_results_is_simply_recorded_anew(tmp_path, small_index) -> None:
    gnn = _gnn(tmp_path / "gnn", seed=0)
    config = _config(tmp_path / "eval", small_index, str(gnn))
    for system in config.systems:
        verify_pair(config, config.benchmarks[0], system)  # killed before any result was written
    changed = _config(tmp_path / "eval", small_index, f"{gnn}+dense")
    check_stored_results(changed)  # nothing stored: nothing to refuse
    verify_pair(changed, changed.benchmarks[0], changed.systems[0])  # the pair's run records anew
    recorded = json.loads(provenance_path(config.out, "b", "graph").read_text())
    assert recorded["system"]["retriever"] == f"{gnn}+dense"


def test_eval_run_refuses_in_one_line_per_pair_before_ray_starts(
    tmp_path, small_index, capsys, monkeypatch
) -> None:
    from hoprag_cli import main

    gnn = _gnn(tmp_path / "gnn", seed=0)
    _record_and_store(_config(tmp_path / "eval", small_index, str(gnn)))
    config_file = tmp_path / "eval.yaml"
    config_file.write_text(
        yaml.safe_dump(_config(tmp_path / "eval", small_index, "dense").model_dump(mode="json"))
    )
    import hoprag.ray_runtime

    started: list[object] = []
    monkeypatch.setattr(hoprag.ray_runtime, "init_ray", lambda *a, **k: started.append(a))
    assert main(["eval", "run", "--config", str(config_file)]) == 2
    assert started == []  # refused before Ray was asked to start
    err = capsys.readouterr().err
    assert "stored results were computed with other settings" in err
    assert "graph.jsonl: retriever_weights:" in err and "system:" in err


def test_eval_run_limit_applies_to_a_config_s_benchmarks(tmp_path, small_index, monkeypatch) -> None:
    """``--limit`` with ``--config`` caps every benchmark of the file (it was silently ignored)."""
    from hoprag_cli import main

    config = _config(tmp_path / "eval", small_index, "dense")
    config_file = tmp_path / "eval.yaml"
    config_file.write_text(yaml.safe_dump(config.model_dump(mode="json")))
    import evaluation.runner

    seen: list[EvalConfig] = []
    monkeypatch.setattr(
        evaluation.runner, "run_evaluation", lambda c, command=None: seen.append(c) or {"results": []}
    )
    assert main(["eval", "run", "--config", str(config_file), "--limit", "3"]) == 0
    assert main(["eval", "run", "--config", str(config_file)]) == 0
    assert [b.limit for b in seen[0].benchmarks] == [3]
    assert [b.limit for b in seen[1].benchmarks] == [None]  # without the flag the file's own
    assert main(["eval", "run", "--config", str(config_file), "--limit", "0"]) == 2
    assert len(seen) == 2


def test_an_index_rebuilt_in_place_is_refused(tmp_path, small_index) -> None:
    import shutil

    index = tmp_path / "index"
    shutil.copytree(small_index, index)
    config = _config(tmp_path / "eval", index, "dense")
    _record_and_store(config)
    # what a rebuild or an update leaves: the manifest naming a new snapshot
    manifest = json.loads((index / "manifest.json").read_text())
    old = index / manifest["snapshot"]
    manifest["snapshot"] = manifest["snapshot"] + "-rebuilt"
    old.rename(index / manifest["snapshot"])
    (index / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(StaleResultsError, match="index: "):
        check_stored_results(config)
