"""The indexing pipeline end to end: real Ray Data, real HTTP LLM endpoint, real embedder.

The LLM is a deterministic rule-based extractor behind the OpenAI-protocol loopback server, so
indexes from different runs can be compared exactly (resume, add/delete) and the server can count
how many prompts each run really sent.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from hoprag.kg.index import KGIndex
from hoprag.kg.tables import EXTRACTION_CACHE, KIND_EXTRACTED
from hoprag.llm.factory import expected_model_id
from indexing.corpus import read_corpus
from indexing.extract import extraction_key
from indexing.pipeline import build_index
from tests.integration.conftest import http_index_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


def kg_content(path: Path) -> dict[str, object]:
    """Everything an index says, by names (ids may differ between equivalent builds)."""
    ix = KGIndex(path)
    titles = ix.documents.column("title").to_pylist()
    triples = set()
    for tid in range(ix.num_triples):
        docs = tuple(sorted(titles[d] for d in ix.triple_doc_ids[tid]))
        triples.add((*ix.triple(tid), int(ix.kind[tid]), docs))
    links = {
        (titles[d], ix.entity_names[e])
        for d, e in zip(
            ix.doc_entities.column("doc_id").to_pylist(),
            ix.doc_entities.column("entity_id").to_pylist(),
            strict=True,
        )
    }
    questions = ix.questions.to_pylist() if ix.questions is not None else []
    return {
        "entities": set(ix.entity_names),
        "triples": triples,
        "links": links,
        "questions": {
            q["id"]: (tuple(q["question_entities"]), tuple(q["supporting_entities"])) for q in questions
        },
    }


def assert_no_duplicates(path: Path) -> None:
    ix = KGIndex(path)
    keys = list(zip(ix.head.tolist(), ix.relation.tolist(), ix.tail.tolist(), strict=True))
    assert len(keys) == len(set(keys)), "duplicate triples"
    assert len(ix.entity_names) == len(set(ix.entity_names)), "duplicate entities"
    used = (
        set(ix.head.tolist()) | set(ix.tail.tolist()) | set(ix.doc_entities.column("entity_id").to_pylist())
    )
    assert used == set(range(ix.num_entities)), "orphaned entities"


@pytest.fixture(scope="module")
def reference_index(tmp_path_factory, synthetic_corpus, rule_server, ray_cluster) -> Path:
    out = tmp_path_factory.mktemp("reference") / "index"
    build_index(
        out, http_index_config(rule_server.base_url, ray_cluster), corpus=read_corpus(synthetic_corpus)
    )
    return out


def test_full_build_over_http_llm(reference_index, synthetic_corpus):
    ix = KGIndex(reference_index, verify=True)
    summary = ix.manifest["summary"]
    assert summary["documents"] == 40
    assert summary["statuses"] == {"ok": 40}
    assert summary["questions"] == summary["questions_with_entities"] == 20
    assert ix.num_entities > 40 and ix.num_triples > 60
    assert_no_duplicates(reference_index)
    q = ix.questions.to_pylist()
    # The rule extractor is near-ideal on synthetic text, so gold answers are reachable.
    entity_answers = [r for r in q if r["answer"] not in ("yes", "no")]
    hit = sum(r["answer_in_supporting_entities"] for r in entity_answers) / len(entity_answers)
    assert hit >= 0.8


def test_stats_cli_prints_one_json_object(reference_index):
    out = subprocess.run(
        [sys.executable, "-m", "hoprag_cli", "index", "stats", str(reference_index), "--json", "--verify"],
        capture_output=True,
        text=True,
        check=True,
    )
    stats = json.loads(out.stdout)
    for key in (
        "documents",
        "entities",
        "relations",
        "triples",
        "documents_with_entities",
        "questions",
        "questions_with_entities",
        "parse_failures",
        "mean_degree",
        "largest_component_pct",
    ):
        assert key in stats
    assert stats["documents"] == 40 and stats["questions"] == 20


def _cached_keys(index_dir: Path) -> set[str]:
    keys: set[str] = set()
    for shard in (index_dir / EXTRACTION_CACHE).glob("part-*.parquet"):
        keys.update(pq.read_table(shard, columns=["doc_key"]).column("doc_key").to_pylist())
    return keys


def _wait_until_quiet(llm, quiet_s: float = 2.0, limit_s: float = 60.0) -> None:
    deadline = time.monotonic() + limit_s
    last, since = sum(llm.calls.values()), time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - since < quiet_s:
        time.sleep(0.1)
        now = sum(llm.calls.values())
        if now != last:
            last, since = now, time.monotonic()


def test_killed_run_resumes_without_re_extracting(
    tmp_path, synthetic_corpus, rule_server, rule_llm, ray_cluster, reference_index
):
    out = tmp_path / "index"
    rule_llm.delay_s = 0.25  # slow enough to kill mid-run: ~10 batches of 2 documents
    cmd = [
        sys.executable,
        "-m",
        "hoprag_cli",
        "index",
        "--corpus",
        str(synthetic_corpus),
        "--out",
        str(out),
        "--set",
        "llm.backend=openai",
        "--set",
        f"llm.openai.base_url={rule_server.base_url}",
        "--set",
        "llm.openai.model=rule",
        "--set",
        "llm.openai.prompt_style=completion",
        "--set",
        "extraction.batch_size=2",
        "--set",
        "extraction.num_cpus=0.5",
        "--set",
        f"ray.address={ray_cluster}",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and len(list((out / EXTRACTION_CACHE).glob("part-*.parquet"))) < 3:
            assert proc.poll() is None, "the run finished before it could be interrupted"
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        rule_llm.delay_s = 0.0
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert not (out / "manifest.json").exists(), "the interrupted run must not have published an index"
    # The dead driver's actors may still finish a request or two before Ray reaps them.
    _wait_until_quiet(rule_llm)
    done = _cached_keys(out)
    assert 0 < len(done) < 60
    before = rule_llm.calls["openie"] + rule_llm.calls["ner"]
    cfg = http_index_config(rule_server.base_url, ray_cluster)
    corpus = read_corpus(synthetic_corpus)
    doc_keys = {
        extraction_key(d.content_hash, expected_model_id(cfg.llm), cfg.extraction) for d in corpus.documents
    }
    summary = build_index(out, cfg, corpus=corpus)
    sent = rule_llm.calls["openie"] + rule_llm.calls["ner"] - before
    assert sent == 60 - len(done), "every cached document/question must be skipped"
    assert summary.reused_from_cache == len(done & doc_keys)
    assert kg_content(out) == kg_content(reference_index)
    # A third run has nothing left to do.
    before = sum(rule_llm.calls.values())
    build_index(
        out, http_index_config(rule_server.base_url, ray_cluster), corpus=read_corpus(synthetic_corpus)
    )
    assert sum(rule_llm.calls.values()) == before
    assert kg_content(out) == kg_content(reference_index)


def test_incremental_add_and_delete(tmp_path, synthetic_corpus, rule_server, ray_cluster, reference_index):
    full = read_corpus(synthetic_corpus)
    cfg = http_index_config(rule_server.base_url, ray_cluster)
    first, second = full.documents[:25], full.documents[25:]
    part_a = tmp_path / "a.jsonl"
    part_b = tmp_path / "b.jsonl"
    part_a.write_text("\n".join(json.dumps({"title": d.title, "text": d.text}) for d in first))
    part_b.write_text("\n".join(json.dumps({"title": d.title, "text": d.text}) for d in second))

    out = tmp_path / "index"
    build_index(out, cfg, corpus=read_corpus(part_a))
    only_a = kg_content(out)
    only_a_theses = _theses(out)
    summary = build_index(out, cfg, corpus=read_corpus(part_b), add=True)
    assert summary.extracted_now == len(second) and summary.reused_from_cache == len(first)
    assert summary.new_entities_embedded < summary.entities  # old entities were not re-embedded
    assert_no_duplicates(out)
    added = kg_content(out)
    reference = kg_content(reference_index)
    assert added["entities"] == reference["entities"]
    assert added["triples"] == reference["triples"]
    assert added["links"] == reference["links"]
    # the memory graph follows: the added documents' theses, with their episodes
    # (a statement of an added document may merge into an earlier one: compare texts, not episodes)
    assert _theses(out) == _theses(reference_index)
    assert {t[0] for t in _theses(out)} > {t[0] for t in only_a_theses}
    # re-adding the same documents changes nothing
    build_index(out, cfg, corpus=read_corpus(part_b), add=True)
    assert kg_content(out)["triples"] == reference["triples"]

    summary = build_index(out, cfg, delete_titles=[d.title for d in second] + ["No Such Title"])
    assert summary.unknown_deletions == ["No Such Title"]
    assert_no_duplicates(out)
    shrunk = kg_content(out)
    assert shrunk["entities"] == only_a["entities"]
    assert shrunk["triples"] == only_a["triples"]
    assert shrunk["links"] == only_a["links"]
    assert _theses(out) == only_a_theses  # the deleted documents' theses went with them


def _theses(index_dir) -> set[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """The memory graph's theses by content: (text, episode titles, object names)."""
    ix = KGIndex(index_dir)
    th = ix.theses
    assert th is not None
    return {
        (
            text,
            tuple(sorted(ix.document_titles[d] for d in th.episodes[i])),
            tuple(sorted(ix.entity_names[e] for e in th.objects[i])),
        )
        for i, text in enumerate(th.texts)
    }


def test_bad_documents_and_a_timing_out_endpoint(tmp_path, rule_server, rule_llm, ray_cluster):
    rows = [
        ("Good One", "Mira Castell was born in Dornwick. Mira Castell starred in The Ember Road."),
        ("Garbage", "Tavin Orlo directed The Ember Road. [[GARBAGE]]"),
        ("Empty Answer", "Ada Korrin founded Velbrin Pharma. [[EMPTY]]"),
        ("Shapes", "Ostarizumab treats Kellan Fever. [[FOURPART]] [[TWOPART]]"),
        ("Slow", "Kellan Fever is caused by Varsi Virus. [[SLOW]]"),
        ("Blank", ""),
        ("Huge", "Dornwick lies in Halvaria. " * 3000),
    ]
    lines = [json.dumps({"title": t, "text": x}).encode() for t, x in rows]
    lines.append(b'{"title": "Bytes", "text": "Quessa is a city in Halvaria. Caf\xe9."}')
    lines.append(json.dumps({"title": "Good One", "text": "A different text under the same title."}).encode())
    corpus_file = tmp_path / "bad.jsonl"
    corpus_file.write_bytes(b"\n".join(lines))
    cfg = http_index_config(rule_server.base_url, ray_cluster, batch_size=3, timeout_s=0.5, max_retries=1)
    out = tmp_path / "index"
    rule_llm.slow_enabled = True
    summary = build_index(out, cfg, corpus=read_corpus(corpus_file))
    assert summary.statuses == {
        "ok": 4,
        "unparseable": 1,
        "empty_output": 1,
        "llm_error": 1,
        "empty_document": 1,
    }
    assert summary.input_problems["duplicate_title"] == 1
    assert summary.input_problems["non_utf8_file"] == 1
    # "Huge": 3000 sentences of 26 characters, 44 to a 1200-character passage (44 * 27 - 1 = 1187),
    # make 69 passages; the 37 beyond max_chunks_per_document (32) are not extracted
    assert summary.input_problems["truncated_passages"] == 37
    ix = KGIndex(out)
    assert ix.documents.num_rows == 8
    triples = {ix.triple(t) for t in range(ix.num_triples)}
    assert ("mira castell", "was born in", "dornwick") in triples  # the first "Good One" won
    assert ("ostarizumab", "treats", "kellan fever") in triples
    assert ("quessa", "is a city in", "halvaria") in triples
    assert (ix.kind == KIND_EXTRACTED).sum() >= 4
    # the endpoint recovers: only the document that failed is sent again
    rule_llm.slow_enabled = False
    before = rule_llm.calls["openie"]
    summary = build_index(out, cfg, corpus=read_corpus(corpus_file))
    assert rule_llm.calls["openie"] - before == 1
    assert summary.statuses["llm_error"] == 0 and summary.statuses["ok"] == 5


def test_a_hotpotqa_file_keeps_each_questions_paragraphs_for_the_distractor_setting(
    tmp_path, rule_server, rule_llm, ray_cluster
):
    """The pool holds every question's paragraphs; the index keeps each question's own as
    ``candidate_docs`` (also through ``--add``), and the distractor setting ranks only those while
    the pooled one ranks the pool: with 4 own paragraphs in a pool of 12, a pooled top 5 always
    holds another question's paragraph, a distractor top 5 never does."""
    from evaluation.retrieval import evaluate_retrieval
    from hoprag.retrieval.loading import load_retriever
    from indexing.formats import read_published

    places = ["Quifen", "Marrow Bay", "Oskel"]
    items = []
    for i, place in enumerate(places):
        own = [
            [f"Film {i}", [f"Film {i} was directed by Person {i}."]],
            [f"Person {i}", [f"Person {i} was born in {place}."]],
            [f"Song {i}", [f"Song {i} was written by Writer {i}."]],
            [f"Lake {i}", [f"Lake {i} lies near Town {i}."]],
        ]
        items.append(
            {
                "_id": f"h{i}",
                "question": f"Where was the director of Film {i} born?",
                "answer": place,
                "type": "bridge",
                "level": "hard",
                "context": own,
                "supporting_facts": [[f"Film {i}", 0], [f"Person {i}", 0]],
            }
        )
    path = tmp_path / "hotpot_dev_distractor.json"
    path.write_text(json.dumps(items))
    out = tmp_path / "index"
    build_index(
        out, http_index_config(rule_server.base_url, ray_cluster), corpus=read_published(path, "hotpotqa")
    )
    index = KGIndex(out)
    own = {q["id"]: q["candidate_docs"] for q in index.questions.to_pylist()}
    assert own == {f"h{i}": [f"Film {i}", f"Person {i}", f"Song {i}", f"Lake {i}"] for i in range(3)}
    assert index.documents.num_rows == 12

    dense = load_retriever("dense", index)
    pooled = evaluate_retrieval(index, dense, ks=(5,), llm=rule_llm)
    distractor = evaluate_retrieval(index, dense, ks=(5,), llm=rule_llm, setting="distractor")
    assert distractor["setting"] == "distractor" and distractor["n"] == pooled["n"] == 3
    for row in distractor["per_question"]:
        assert set(row["documents"]) == set(own[row["id"]])  # all four own, nothing else
    assert all(set(r["documents"]) - set(own[r["id"]]) for r in pooled["per_question"])
    assert distractor["recall@5"] == 1.0

    # an --add of other documents keeps the questions' candidates
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps([{"title": "Other Lake", "text": "Other Lake lies near Town 9."}]))
    build_index(
        out, http_index_config(rule_server.base_url, ray_cluster), corpus=read_corpus(extra), add=True
    )
    assert {q["id"]: q["candidate_docs"] for q in KGIndex(out).questions.to_pylist()} == own
