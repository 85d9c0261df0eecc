"""The console script: argument handling and clear exit codes for user errors."""

from __future__ import annotations

import json

from hoprag_cli import main


def test_generate_writes_the_raw_layout(tmp_path, capsys):
    assert (
        main(
            [
                "generate",
                "--out",
                str(tmp_path),
                "--num-documents",
                "50",
                "--test-questions",
                "5",
                "--train-questions",
                "5",
                "--held-out-domains",
                "film",
            ]
        )
        == 0
    )
    assert "50 documents" in capsys.readouterr().out
    test = json.loads((tmp_path / "raw" / "test.json").read_text())
    train = json.loads((tmp_path / "raw" / "train.json").read_text())
    assert len(test) == 5 and all(q["domain"] != "film" for q in train)


def test_user_errors_exit_2_with_a_message(tmp_path, capsys):
    assert main(["generate", "--out", str(tmp_path), "--held-out-domains", "astronomy"]) == 2
    assert "astronomy" in capsys.readouterr().err
    assert main(["index", "--out", str(tmp_path / "ix")]) == 2
    assert "--corpus" in capsys.readouterr().err
    assert main(["index", "--corpus", str(tmp_path / "missing"), "--out", str(tmp_path / "ix")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert (
        main(
            [
                "index",
                "--corpus",
                str(tmp_path),
                "--out",
                str(tmp_path / "ix"),
                "--set",
                "extraction.batch_size=-1",
            ]
        )
        == 2
    )
    assert "extraction.batch_size" in capsys.readouterr().err
    # A misspelled setting is refused (not silently ignored) in one line naming it and the valid names.
    argv = [
        "index",
        "--corpus",
        str(tmp_path),
        "--out",
        str(tmp_path / "ix"),
        "--set",
        "extraction.batchsize=8",
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "hoprag: config error: invalid IndexConfig: unknown setting extraction.batchsize" in err
    assert "did you mean extraction.batch_size?" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert main(["index", "stats", str(tmp_path / "nothing")]) == 2
    assert "not a hoprag index" in capsys.readouterr().err
    assert main(["index", "--out", str(tmp_path / "ix"), "--delete", "X"]) == 2
    assert "no index to modify" in capsys.readouterr().err
