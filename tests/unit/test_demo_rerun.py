"""`hoprag demo` run again after hoprag's shipped GLM changed: its own fine-tuning run starts over
(resuming it from other weights would be refused), a run from the same weights is kept."""

from __future__ import annotations

import json

from hoprag.glm.artifact import PACKAGED_GLM_NAME, WEIGHTS, read_retriever_meta
from hoprag_cli.demo import _forget_run_of_other_weights
from training.warm_start import INIT_FILE, weights_sha256


def _run(tmp_path, name, sha):
    run = tmp_path / name
    (run / "retriever").mkdir(parents=True)
    if sha is not None:
        (run / INIT_FILE).write_text(json.dumps({"path": "packaged", "weights_sha256": sha}))
    return run


def test_the_demo_run_of_older_shipped_weights_is_discarded(tmp_path, capsys):
    directory, _ = read_retriever_meta(PACKAGED_GLM_NAME)
    same = _run(tmp_path, "same", weights_sha256(directory / WEIGHTS))
    older = _run(tmp_path, "older", "0" * 64)
    never = _run(tmp_path, "from-minilm", None)
    for run in (same, older, never):
        _forget_run_of_other_weights(run, PACKAGED_GLM_NAME)
    assert same.is_dir() and never.is_dir() and not older.exists()
    assert "the shipped GLM changed" in capsys.readouterr().out
