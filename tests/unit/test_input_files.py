"""Input files as users have them: compressed, with a BOM or CRLF, duplicated ids, the wrong
--format, nothing usable in them; `hoprag index --dry-run` checks one without a model."""

from __future__ import annotations

import bz2
import gzip
import json
from pathlib import Path

import pytest

from indexing.corpus import CorpusError, read_corpus
from indexing.formats import NothingToIndexError, read_published

REAL = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "real"
HOTPOT = REAL / "hotpotqa" / "dev-distractor-sample.json"
MUSIQUE = REAL / "musique" / "dev-sample.jsonl"


def _hotpot(n: int) -> list[dict]:
    return json.loads(HOTPOT.read_text(encoding="utf-8"))[:n]


def _musique_lines(n: int) -> list[str]:
    return MUSIQUE.read_text(encoding="utf-8").splitlines()[:n]


def _same_read(a: object, b: object) -> bool:
    return (a.documents, a.questions) == (b.documents, b.questions)  # type: ignore[attr-defined]


def test_gzip_and_bzip2_files_read_as_their_plain_content(tmp_path: Path) -> None:
    plain_json = tmp_path / "h.json"
    plain_json.write_text(json.dumps(_hotpot(3)), encoding="utf-8")
    plain_jsonl = tmp_path / "m.jsonl"
    plain_jsonl.write_text("\n".join(_musique_lines(3)) + "\n", encoding="utf-8")
    for plain in (plain_json, plain_jsonl):
        expected = read_published(plain)
        for suffix, compress in ((".gz", gzip.compress), (".bz2", bz2.compress)):
            packed = plain.with_name(plain.name + suffix)
            packed.write_bytes(compress(plain.read_bytes()))
            assert _same_read(read_published(packed), expected), packed.name
    corpus = tmp_path / "docs.jsonl.gz"  # hoprag's own {title, text} rows, compressed
    corpus.write_bytes(gzip.compress(b'{"title": "A", "text": "Alpha."}\n'))
    assert [d.title for d in read_corpus(corpus).documents] == ["A"]


def test_a_byte_order_mark_crlf_line_ends_and_blank_lines_change_nothing(tmp_path: Path) -> None:
    lines = _musique_lines(3)
    plain = tmp_path / "plain.jsonl"
    plain.write_text("\n".join(lines) + "\n", encoding="utf-8")
    windows = tmp_path / "windows.jsonl"
    windows.write_bytes(b"\xef\xbb\xbf" + ("\r\n\r\n".join(lines) + "\r\n\r\n").encode())
    assert _same_read(read_published(windows), read_published(plain))
    listed = tmp_path / "bom.json"
    listed.write_bytes(b"\xef\xbb\xbf" + json.dumps(_hotpot(2), indent=1).replace("\n", "\r\n").encode())
    assert len(read_published(listed).questions["test"]) == 2
    rows = tmp_path / "rows.json"
    rows.write_bytes(b'\xef\xbb\xbf[{"title": "A", "text": "Alpha."}]\r\n')
    assert [d.title for d in read_corpus(rows).documents] == ["A"]


def test_a_json_list_on_one_huge_line_is_read_item_by_item(tmp_path: Path) -> None:
    items = _hotpot(10) * 30  # ~300 items, one line of several MB
    for n, item in enumerate(items):
        item = dict(item, _id=f"q{n}")
        items[n] = item
    path = tmp_path / "one-line.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    assert len(path.read_text().splitlines()) == 1
    corpus = read_published(path)
    assert len(corpus.questions["test"]) == 300 and corpus.read.items == 300


def test_a_repeated_question_id_is_counted_and_the_first_kept(tmp_path: Path) -> None:
    first, second = _hotpot(2)
    again = dict(second, _id=first["_id"])
    path = tmp_path / "dup.json"
    path.write_text(json.dumps([first, again, second]), encoding="utf-8")
    corpus = read_published(path)
    assert [q["question"] for q in corpus.questions["test"]] == [first["question"], second["question"]]
    assert corpus.read.duplicates == 1
    assert f"item 2 (id {first['_id']}): id: an earlier item has this id" in "\n".join(corpus.report)
    # the repeated item's own paragraphs were not pooled: only the kept items' titles
    kept = {t for item in (first, second) for t, _ in item["context"]}
    assert {d.title for d in corpus.documents} == kept


def test_an_answerable_musique_item_without_a_supporting_paragraph_is_skipped(tmp_path: Path) -> None:
    good, other = (json.loads(line) for line in _musique_lines(2))
    for paragraph in other["paragraphs"]:
        paragraph["is_supporting"] = False
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(other) + "\n", encoding="utf-8")
    corpus = read_published(path)
    assert [q["id"] for q in corpus.questions["test"]] == [good["id"]]
    assert f"line 2 (id {other['id']}): paragraphs: no paragraph is_supporting" in "\n".join(corpus.report)


def test_a_format_that_does_not_match_the_file_names_what_the_file_is(tmp_path: Path) -> None:
    musique = tmp_path / "m.jsonl"
    musique.write_text("\n".join(_musique_lines(2)) + "\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"looks like musique, not hotpotqa: .*paragraphs"):
        read_published(musique, "hotpotqa")
    with pytest.raises(CorpusError, match="looks like musique, not gfmrag"):
        read_published(musique, "gfmrag")
    other = tmp_path / "other.json"
    other.write_text('[{"foo": 1}]', encoding="utf-8")
    with pytest.raises(
        CorpusError, match=r"not a musique file: it is JSON whose first item has the fields \{foo\}"
    ):
        read_published(other, "musique")
    two_wiki = json.loads((REAL / "2wikimultihopqa" / "dev-context-sample.json").read_text())[:2]
    path = tmp_path / "2wiki.json"
    path.write_text(json.dumps(two_wiki), encoding="utf-8")
    assert len(read_published(path, "hotpotqa").questions["test"]) == 2  # one reader for both


@pytest.mark.parametrize(
    ("name", "content", "what"),
    [
        ("weird.json", '[{"foo": 1}, {"bar": 2}]', "no document to index in 2 items, read as gfmrag"),
        ("cut.jsonl", '{"id": "2hop__1", "question": "Who', "no document to index in 1 item, read as gfmrag"),
        ("empty.json", "[]", "no document to index in 0 items"),
    ],
)
def test_an_input_with_nothing_to_index_is_an_error_that_says_why(
    tmp_path: Path, name: str, content: str, what: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(NothingToIndexError) as caught:
        read_published(path)
    message = str(caught.value)
    assert what in message and "tried: hipporag" in message and "A valid gfmrag corpus" in message


def test_a_benchmark_file_whose_items_all_fail_yields_no_questions_error(tmp_path: Path) -> None:
    items = [dict(item, supporting_facts=[["Nowhere", 0]]) for item in _hotpot(3)]
    path = tmp_path / "h.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    with pytest.raises(
        NothingToIndexError, match=r"no question to index in 3 items, read as hotpotqa \(detected"
    ) as caught:
        read_published(path)
    assert "3 x supporting_facts: title … is not in the item's context" in str(caught.value)
    assert caught.value.read.skipped == 3 and caught.value.documents == 0


def test_index_refuses_an_empty_input_before_writing_anything(tmp_path: Path, capsys) -> None:
    from hoprag_cli import main

    path = tmp_path / "weird.json"
    path.write_text('[{"foo": 1}, {"bar": 2}]', encoding="utf-8")
    out = tmp_path / "index"
    assert main(["index", "--corpus", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no document to index" in err and "Traceback" not in err
    assert not (out / "manifest.json").exists() and not list(out.glob("*.parquet"))
    problems = [json.loads(line) for line in (out / "logs" / "problems.jsonl").read_text().splitlines()]
    assert [p["where"] for p in problems] == ["item 1", "item 2"]


def test_dry_run_reads_everything_loads_no_model_and_ends_with_one_json_line(tmp_path: Path, capsys) -> None:
    from hoprag_cli import main

    lines = _musique_lines(3)
    broken = json.loads(lines[2])
    broken["paragraphs"] = "not a list"
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join([lines[0], lines[1][:200], json.dumps(broken)]) + "\n", encoding="utf-8")
    assert main(["index", "--corpus", str(path), "--dry-run", "--json"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["items"] == 3 and report["questions"] == 1 and report["documents"] == 20
    assert report["problem_locations"] == ["line 2", "line 3"]
    kinds = sorted(report["problems"])
    assert len(kinds) == 2 and kinds[0].startswith("line: not JSON") and sum(report["problems"].values()) == 2
    assert kinds[1] == "paragraphs: missing or not a list"
    assert report["estimated_llm_calls"] >= report["documents"] + 1  # passages + the question's NER
    empty = tmp_path / "weird.json"
    empty.write_text('[{"foo": 1}]', encoding="utf-8")
    assert main(["index", "--corpus", str(empty), "--dry-run", "--json"]) == 2
    failed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert failed["documents"] == 0 and failed["problem_locations"] == ["item 1"] and "error" in failed
