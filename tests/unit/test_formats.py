"""Readers of the published formats (indexing.formats) on faithful slices of the real files in
benchmarks/data/real and on malformed items written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hoprag.text import clean_document_text
from indexing.corpus import CorpusError
from indexing.formats import detect_format, read_published

REAL = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "real"


def _items(path: Path, n: int) -> list[dict]:
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[:n]]
    return json.loads(path.read_text(encoding="utf-8"))[:n]


def _write(path: Path, items: list, jsonl: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if jsonl:
        path.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    else:
        path.write_text(json.dumps(items), encoding="utf-8")
    return path


def test_hotpotqa_distractor_items_pool_their_paragraphs_and_name_their_gold_ones(tmp_path):
    items = _items(REAL / "hotpotqa" / "dev-distractor-sample.json", 3)
    path = _write(tmp_path / "hotpot_dev_distractor.json", items)
    assert detect_format(path) == "hotpotqa"
    corpus = read_published(path)
    assert corpus.format == "hotpotqa" and not corpus.problems
    questions = corpus.questions["test"]
    assert [q["id"] for q in questions] == [i["_id"] for i in items]
    keys = {d.title for d in corpus.documents}
    for q, item in zip(questions, items, strict=True):
        gold_titles = list(dict.fromkeys(t for t, _ in item["supporting_facts"]))
        assert q["supporting_facts"] == gold_titles and set(gold_titles) <= keys
        assert q["candidate_documents"] == [t for t, _ in item["context"]]  # its own ten, in order
        assert q["metadata"] == {"type": item["type"], "level": item["level"], "hops": len(gold_titles)}
    # sentences are joined with one space: HotpotQA's carry their own leading spaces
    title, sentences = items[0]["context"][0]
    text = {d.title: d.text for d in corpus.documents}[title]
    assert text == " ".join(s.strip() for s in sentences) and "  " not in text


def test_the_same_paragraph_in_two_questions_is_one_document(tmp_path):
    first, second = _items(REAL / "hotpotqa" / "dev-distractor-sample.json", 2)
    second = dict(second, context=[*second["context"], first["context"][0]])
    corpus = read_published(_write(tmp_path / "q.json", [first, second]), "hotpotqa")
    assert len(corpus.documents) == 20  # 10 + 10 + the shared one once
    assert corpus.questions["test"][1]["candidate_documents"][-1] == first["context"][0][0]


def test_2wiki_items_keep_their_gold_facts(tmp_path):
    items = _items(REAL / "2wikimultihopqa" / "dev-context-sample.json", 2)
    path = _write(tmp_path / "dev.json", items)
    assert detect_format(path) == "2wikimultihopqa"
    questions = read_published(path).questions["test"]
    assert questions[0]["evidences"] == [list(e) for e in items[0]["evidences"]]
    assert questions[0]["metadata"]["type"] == items[0]["type"]


def test_a_hipporag_release_reads_its_questions_against_its_corpus_file():
    release = REAL / "2wikimultihopqa"
    assert detect_format(release) == "hipporag"
    assert detect_format(release / "2wikimultihopqa.json") == "hipporag"
    corpus = read_published(release)
    items = json.loads((release / "2wikimultihopqa.json").read_text(encoding="utf-8"))
    assert len(corpus.documents) == 6119 and len(corpus.questions["test"]) == len(items)
    keys = {d.title for d in corpus.documents}
    for q, item in zip(corpus.questions["test"], items, strict=True):
        assert "candidate_documents" not in q  # pooled: the corpus is every question's candidates
        assert set(q["supporting_facts"]) <= keys and q["supporting_facts"]
        assert q["evidences"] and q["answer"] == item["answer"]


def test_a_directory_with_two_hipporag_datasets_asks_for_one(tmp_path):
    for name in ("musique", "hotpotqa"):
        _write(tmp_path / f"{name}_corpus.json", [{"title": "A", "text": "a"}])
        _write(tmp_path / f"{name}.json", [])
    with pytest.raises(CorpusError, match="several HippoRAG 2 datasets"):
        read_published(tmp_path)


def test_musique_keeps_paragraphs_that_share_a_title_apart():
    corpus = read_published(REAL / "musique" / "dev-sample.jsonl")
    assert corpus.format == "musique"
    questions = {q["id"]: q for q in corpus.questions["test"]}
    assert len(questions) == 101
    texts = {d.title: d.text for d in corpus.documents}
    item = json.loads((REAL / "musique" / "dev-sample.jsonl").read_text(encoding="utf-8").splitlines()[100])
    q = questions[item["id"]]
    assert len(q["candidate_documents"]) == 20 == len(set(q["candidate_documents"]))  # two share a title
    by_idx = dict(zip([p["idx"] for p in item["paragraphs"]], q["candidate_documents"], strict=True))
    for p in item["paragraphs"]:  # the text as every reader keeps it (NFC, no control characters)
        assert texts[by_idx[p["idx"]]] == clean_document_text(p["paragraph_text"])
    assert q["supporting_facts"] == [by_idx[p["idx"]] for p in item["paragraphs"] if p["is_supporting"]]
    steps = item["question_decomposition"]
    assert [s["answer"] for s in q["decomposition"]] == [s["answer"] for s in steps]
    assert [s["document"] for s in q["decomposition"]] == [by_idx[s["paragraph_support_idx"]] for s in steps]
    assert q["metadata"]["hops"] == len(steps) and q["metadata"]["type"] == item["id"].split("__")[0]
    # the decomposition stays with the question in the index (plan-mode step recall reads it there)
    assert q["metadata"]["decomposition"] == [
        {"question": s["question"], "answer": s["answer"]} for s in steps
    ]
    assert any(k.endswith(" (2)") for k in texts)  # a second distinct paragraph under one title


def test_malformed_items_are_reported_where_an_editor_shows_them_and_skipped(tmp_path):
    good = _items(REAL / "musique" / "dev-sample.jsonl", 2)
    unanswerable = dict(good[1], id="2hop__x", answerable=False)
    lines = [
        json.dumps(good[0]),
        "{not json",
        json.dumps({"id": "x", "paragraphs": []}),
        json.dumps(unanswerable),
    ]
    path = tmp_path / "musique_full.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    corpus = read_published(path, "musique")
    ids = [q["id"] for q in corpus.questions["test"]]
    assert ids == [good[0]["id"], "2hop__x"]
    assert corpus.questions["test"][1]["supporting_facts"] == []  # unanswerable: no recall gold
    report = "\n".join(corpus.report)
    assert "4 items read, 2 questions kept, 2 skipped, 1 unanswerable" in report
    assert "line 2: line: not JSON" in report and "line 3 (id x): question: missing or empty" in report
    assert corpus.read.items == 4 and corpus.read.skipped == 2


def test_a_json_list_that_breaks_off_keeps_the_items_before_the_break(tmp_path):
    items = _items(REAL / "hotpotqa" / "dev-distractor-sample.json", 3)
    text = json.dumps(items)
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) - 2000], encoding="utf-8")  # the third item is cut mid-way
    corpus = read_published(path, "hotpotqa")
    assert [q["id"] for q in corpus.questions["test"]] == [i["_id"] for i in items[:2]]
    assert any("item 3: file: the JSON breaks off" in line for line in corpus.report)


def test_an_item_that_fails_validation_is_neither_a_document_nor_a_question(tmp_path):
    items = _items(REAL / "hotpotqa" / "dev-distractor-sample.json", 3)
    item = items[0]
    bad_entry = dict(items[1], _id="bad-entry", context=[*items[1]["context"][:3], ["no sentences"]])
    no_gold = dict(items[2], _id="no-gold", supporting_facts=[["Nowhere", 0]])
    corpus = read_published(_write(tmp_path / "q.json", [item, bad_entry, no_gold, "a string"]), "hotpotqa")
    assert [q["id"] for q in corpus.questions["test"]] == [item["_id"]]
    titles = {d.title for d in corpus.documents}
    assert titles == {title for title, _ in item["context"]}  # no paragraph of the rejected items
    report = "\n".join(corpus.report)
    assert "item 2 (id bad-entry): context: entry 3 is not [title, [sentences]]" in report
    assert "item 3 (id no-gold): supporting_facts: title 'Nowhere' is not in the item's context" in report
    assert "item 4: item: not a JSON object" in report
    assert corpus.read.items == 4 and corpus.read.skipped == 3


def test_files_that_are_not_published_formats_go_to_the_native_reader(tmp_path):
    native = _write(tmp_path / "docs.json", [{"title": "A", "text": "Alpha."}])
    assert detect_format(native) == "gfmrag"
    assert [d.title for d in read_published(native).documents] == ["A"]
    mapping = tmp_path / "raw" / "dataset_corpus.json"  # GFM-RAG's {title: text}: not a pair, not a list
    mapping.parent.mkdir()
    mapping.write_text(json.dumps({"B": "Beta."}), encoding="utf-8")
    assert detect_format(mapping) == detect_format(tmp_path) == "gfmrag"
    assert [d.title for d in read_published(tmp_path).documents] == ["B"]
    with pytest.raises(CorpusError, match="does not exist"):
        read_published(tmp_path / "missing.json")


def test_the_formats_benchmark_reads_its_train_sized_file_with_both_readers(tmp_path):
    """``hoprag bench formats`` on a 30-item file: the copies' paragraphs stay distinct (the pool
    grows as a real train file's), and both readers see every item and paragraph."""
    from benchmarks.formats import SAMPLE, measure_reader, write_train_sized_file

    path = tmp_path / "train.json"
    assert write_train_sized_file(path, 30) > SAMPLE.stat().st_size // 10
    ours, baseline = measure_reader(path, "read_published"), measure_reader(path, "json.load")
    assert ours["items"] == baseline["items"] == 30
    assert ours["paragraphs"] == baseline["paragraphs"] == 300
    assert ours["peak_rss_mib"] > 0 and baseline["seconds"] >= 0


def test_a_train_fraction_splits_the_questions_by_id_and_never_moves_one():
    path = REAL / "musique" / "dev-sample.jsonl"
    whole = read_published(path, "musique")
    split = read_published(path, "musique", train_fraction=0.5)
    ids = {q["id"] for q in whole.questions["test"]}
    train = {q["id"] for q in split.questions["train"]}
    test = {q["id"] for q in split.questions["test"]}
    assert train | test == ids and not train & test
    assert 30 <= len(train) <= 71  # a hash split: about half of 101
    assert split.documents == whole.documents  # the pool does not depend on the split
    assert "questions split by id" in split.report[-1]
    # a question's split depends only on its id: a third of them, read alone, land where they were
    from indexing.formats.reader import train_test_split

    some = whole.questions["test"][::3]
    again = train_test_split(some, 0.5)
    assert {q["id"] for q in again["train"]} == train & {q["id"] for q in some}
    with pytest.raises(CorpusError, match="not in"):
        read_published(path, "musique", train_fraction=1.0)
    with pytest.raises(CorpusError, match="gfmrag"):
        read_published(REAL / "musique", "gfmrag", train_fraction=0.5)
