"""The index manifest is validated, and an index's files are verified against it when it is opened:
by default small files by sha256 and large ones by size plus sampled chunks; in full for
``index stats --verify`` and before ``--add`` / ``--delete`` build on a previous index."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hoprag.kg import store
from hoprag.kg.index import KGIndex
from hoprag.kg.store import KGIndexError, read_manifest, verify_checksums
from hoprag.kg.tables import KGTables
from tests.support.film_kg import film_tables, write_film_index


@pytest.fixture(scope="module")
def tables(embedder) -> KGTables:
    return film_tables(embedder)


@pytest.fixture
def index(tmp_path: Path, embedder, tables: KGTables) -> Path:
    return write_film_index(tmp_path / "index", embedder, tables=tables)


@pytest.fixture
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files above 1 KiB count as large (the film index's embeddings are ~30 KB); 4 chunks of 64 B."""
    monkeypatch.setattr(store, "FULL_HASH_MAX_BYTES", 1024)
    monkeypatch.setattr(store, "SAMPLE_CHUNKS", 4)
    monkeypatch.setattr(store, "SAMPLE_CHUNK_BYTES", 64)


def _manifest(index: Path) -> dict[str, Any]:
    return json.loads((index / "manifest.json").read_text())


def _write_manifest(index: Path, manifest: Any) -> None:
    (index / "manifest.json").write_text(json.dumps(manifest))


def _file(index: Path, name: str) -> Path:
    return index / _manifest(index)["snapshot"] / name


def _flip(path: Path, offset: int) -> None:
    """Corrupt one byte in place (the size stays the same)."""
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def _unsampled_offset(path: Path, manifest: dict[str, Any]) -> int:
    samples = manifest["samples"]
    size = path.stat().st_size
    covered = {
        b
        for o in store._sample_offsets(size, samples["chunks"], samples["chunk_bytes"])
        for b in range(o, o + samples["chunk_bytes"])
    }
    return next(b for b in range(size // 2, size) if b not in covered)


def test_the_manifest_records_sizes_and_sampled_hashes(index: Path) -> None:
    m = read_manifest(index)
    snap = index / m["snapshot"]
    assert set(m["sizes"]) == set(m["checksums"]) == set(m["samples"]["sha256"])
    assert all(m["sizes"][f] == (snap / f).stat().st_size for f in m["sizes"])
    assert m["samples"]["chunks"] == store.SAMPLE_CHUNKS
    assert m["samples"]["chunk_bytes"] == store.SAMPLE_CHUNK_BYTES


@pytest.mark.parametrize(
    "snapshot",
    [
        "/etc",
        "ABSOLUTE",  # the real snapshot directory, spelled as an absolute path
        "snapshots/../snapshots/NAME",
        "../elsewhere/snapshots/NAME",
        "snapshots/NAME/..",
        "other/NAME",
        "NAME",
        "snapshots",
        "snapshots/.building-x",
        "snapshots\\NAME",
    ],
)
def test_the_snapshot_must_be_a_relative_path_inside_snapshots(index: Path, snapshot: str) -> None:
    m = _manifest(index)
    name = m["snapshot"].split("/")[1]
    m["snapshot"] = str(index / m["snapshot"]) if snapshot == "ABSOLUTE" else snapshot.replace("NAME", name)
    _write_manifest(index, m)
    with pytest.raises(KGIndexError, match=r"must be a relative path snapshots/<name> inside the index"):
        KGIndex(index)
    with pytest.raises(KGIndexError, match=r"no absolute path, no '\.\.'"):
        read_manifest(index)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"snapshot": None}, r"no 'snapshot' entry"),
        ({"checksums": None}, r"no 'checksums' entry"),
        ({"snapshot": 7}, r"'snapshot' must be a string, not int"),
        ({"snapshot": ["snapshots", "x"]}, r"'snapshot' must be a string, not list"),
        ({"checksums": ["entities.parquet"]}, r"'checksums' must map snapshot file names"),
        ({"checksums": {"../manifest.json": "0" * 64}}, r"'checksums' must map snapshot file names"),
        ({"checksums": {"triples.parquet": 1}}, r"'checksums' must map snapshot file names"),
        ({"checksums": {"triples.parquet": "0" * 64}}, r"'checksums' lists no documents\.parquet"),
        ({"sizes": {"triples.parquet": "12"}}, r"'sizes' must map snapshot file names to byte counts"),
        ({"samples": {"chunks": 4}}, r"'samples' must hold chunks, chunk_bytes"),
        ({"samples": []}, r"'samples' must hold"),
    ],
)
def test_a_malformed_manifest_is_an_index_error(index: Path, change: dict[str, Any], message: str) -> None:
    """Never a KeyError or TypeError from deep inside the loader."""
    m = _manifest(index)
    for key, value in change.items():
        if value is None:
            del m[key]
        else:
            m[key] = value
    _write_manifest(index, m)
    with pytest.raises(KGIndexError, match=message + r".*the index is damaged, rebuild it"):
        KGIndex(index)


def test_a_manifest_that_is_not_an_object_is_an_index_error(index: Path) -> None:
    _write_manifest(index, [1, 2])
    with pytest.raises(KGIndexError, match="does not hold a JSON object"):
        KGIndex(index)


def test_opening_verifies_by_default_and_names_the_corrupted_file(index: Path) -> None:
    _flip(_file(index, "documents.parquet"), 100)
    with pytest.raises(KGIndexError, match=r"snapshot file documents\.parquet does not match the checksum"):
        KGIndex(index)
    assert KGIndex(index, verify="none").num_entities > 0  # the cheap path, on request
    with pytest.raises(KGIndexError, match=r"documents\.parquet"):
        KGIndex(index, verify=True)
    _file(index, "triples.parquet").unlink()
    with pytest.raises(KGIndexError, match=r"files documents\.parquet, triples\.parquet do not match"):
        KGIndex(index)


def test_large_files_are_checked_by_size_and_sampled_chunks(
    tmp_path: Path, embedder, tables: KGTables, small_threshold: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = write_film_index(tmp_path / "index", embedder, tables=tables)
    m = read_manifest(index)
    emb = _file(index, "entity_embeddings.npy")
    assert emb.stat().st_size > 8 * store.FULL_HASH_MAX_BYTES
    hashed: list[str] = []
    full_sha256 = store._sha256
    monkeypatch.setattr(store, "_sha256", lambda p: hashed.append(p.name) or full_sha256(p))
    KGIndex(index)
    assert "entity_embeddings.npy" not in hashed and "relations.parquet" in hashed  # sampled vs full

    original = emb.read_bytes()
    _flip(emb, emb.stat().st_size - 1)  # the last byte is always in a sampled chunk
    with pytest.raises(KGIndexError, match=r"snapshot file entity_embeddings\.npy does not match"):
        KGIndex(index)
    emb.write_bytes(original[:-4])  # truncated
    with pytest.raises(KGIndexError, match=r"entity_embeddings\.npy"):
        KGIndex(index)
    # The documented limit of the fast check: a same-size change between the sampled chunks is
    # found by the full check only.
    emb.write_bytes(original)
    _flip(emb, _unsampled_offset(emb, m))
    assert verify_checksums(index, m, "fast") == []
    assert verify_checksums(index, m, "full") == ["entity_embeddings.npy"]
    with pytest.raises(KGIndexError, match=r"entity_embeddings\.npy"):
        KGIndex(index, verify="full")


def test_manifests_without_sizes_and_samples_are_verified_in_full(
    tmp_path: Path, embedder, tables: KGTables, small_threshold: None
) -> None:
    index = write_film_index(tmp_path / "index", embedder, tables=tables)
    m = _manifest(index)
    emb = _file(index, "entity_embeddings.npy")
    _flip(emb, _unsampled_offset(emb, m))
    del m["sizes"], m["samples"]  # as written before they existed
    _write_manifest(index, m)
    with pytest.raises(KGIndexError, match=r"entity_embeddings\.npy"):
        KGIndex(index)


def test_loaders_of_ask_serve_and_eval_refuse_a_corrupted_index(index: Path) -> None:
    from evaluation.config import BenchmarkSpec
    from evaluation.questions import load_questions
    from hoprag.qa.builder import load_components
    from hoprag.qa.config import QASettings
    from serving.builder import check_sources
    from serving.settings import QAAppSettings

    _flip(_file(index, "triples.parquet"), 50)
    with pytest.raises(KGIndexError, match=r"triples\.parquet"):
        load_components(index, QASettings())  # hoprag ask, the QA deployment, evaluation workers
    with pytest.raises(ValueError, match=r"QA app: index: .*triples\.parquet"):
        check_sources(QAAppSettings(index=str(index)))  # before a roll-out replaces any replica
    with pytest.raises(ValueError, match=r"benchmark film: .*triples\.parquet"):
        load_questions(BenchmarkSpec(name="film", index=index))


def test_commands_refuse_a_corrupted_index_in_one_line(index: Path, tmp_path: Path, capsys) -> None:
    from hoprag_cli import main

    _flip(_file(index, "entities.parquet"), 50)
    for argv in (
        ["index", "stats", str(index)],
        ["train", "--index", str(index), "--out", str(tmp_path / "run")],
        ["ask", "--index", str(index), "Who directed Payment On Demand?"],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert "entities.parquet does not match the checksum" in err and "Traceback" not in err, argv


def _no_extraction(*args: object, **kwargs: object) -> None:
    raise AssertionError("the pipeline went on to extract on top of a damaged index")


def test_add_and_delete_refuse_a_corrupted_previous_index(
    tmp_path: Path,
    embedder,
    tables: KGTables,
    small_threshold: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys,
) -> None:
    """The damage would otherwise be copied into a new snapshot with fresh checksums."""
    import indexing.pipeline
    from hoprag_cli import main
    from indexing.config import IndexConfig
    from indexing.corpus import Corpus, Document
    from indexing.pipeline import build_index

    monkeypatch.setattr(indexing.pipeline, "run_extraction", _no_extraction)
    index = write_film_index(tmp_path / "index", embedder, tables=tables)
    m = _manifest(index)
    # Same size, a byte between the sampled chunks of a "large" file: only the full check sees it.
    emb = _file(index, "entity_embeddings.npy")
    _flip(emb, _unsampled_offset(emb, m))
    assert KGIndex(index).num_entities  # the default (fast) check passes
    new = Corpus([Document("Halvaria", "Halvaria is a country.")])
    for kwargs in ({"corpus": new, "add": True}, {"delete_titles": ["Berlin"]}):
        with pytest.raises(KGIndexError, match=r"refusing --add/--delete on a damaged index") as info:
            build_index(index, IndexConfig(), **kwargs)  # type: ignore[arg-type]
        message = str(info.value)
        assert "entity_embeddings.npy" in message and f"--out {index}" in message
        assert "Rebuild it from the complete corpus without --add/--delete" in message
    assert _manifest(index) == m  # nothing was written
    corpus = tmp_path / "more.jsonl"
    corpus.write_text(json.dumps({"title": "Halvaria", "text": "Halvaria is a country."}) + "\n")
    assert main(["index", "--corpus", str(corpus), "--out", str(index), "--add"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hoprag: refusing --add/--delete on a damaged index") and "Traceback" not in err


def test_triple_documents_read_back_as_written_without_a_list_per_triple(tmp_path: Path, embedder) -> None:
    tables = film_tables(embedder)
    written = [list(d) for d in tables.triple_doc_ids]
    written[0] = []  # a triple no document states (e.g. a synonym edge)
    tables.triple_doc_ids = written
    store.write_snapshot(tmp_path / "ix", tables, {})
    docs = KGIndex(tmp_path / "ix").triple_doc_ids
    assert len(docs) == len(written) and list(docs) == written
    assert docs[0] == [] and docs[-1] == written[-1] and all(isinstance(d, int) for d in docs[1])
    with pytest.raises(IndexError):
        docs[len(written)]
    assert docs.offsets.dtype.kind == "i" and len(docs.doc_ids) == sum(map(len, written))
