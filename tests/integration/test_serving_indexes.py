"""Several indexes in one QA app, and live document updates, on a real local Ray Serve over HTTP.

Both indexes are built by the real pipeline with the rule-based LLM behind the OpenAI protocol
(a loopback server in this process), so an update job (a Ray task running the index's own recorded
settings) extracts uploaded documents the same way; the QA app's LLM is that server too.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from hoprag.ports import pick_free_port
from indexing.corpus import Corpus, Document, read_corpus
from indexing.pipeline import build_index
from serving.settings import QAAppSettings
from tests.integration.conftest import http_index_config

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

TOKEN = "upd4te-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
NEW_DOC = {
    "title": "Velmora Harbor",
    "text": "Zorblax Quintera founded Velmora Harbor. Velmora Harbor lies on the Quill Sea.",
}
QUESTION = "Who founded Velmora Harbor?"
SMALL_DOCS = [
    Document("Harlow Fen", "Harlow Fen borders Dunmere Marsh. Harlow Fen was drained by Oswin Tarrow."),
    Document("Oswin Tarrow", "Oswin Tarrow was born in Keswick Vale. Oswin Tarrow married Elda Morrow."),
    Document("Keswick Vale", "Keswick Vale lies north of Harlow Fen."),
]


@dataclass
class App:
    base: str
    films: Path  # 'films': the synthetic benchmark's first documents
    small: Path  # 'small': three hand-written documents


@pytest.fixture(scope="module")
def app(ray_cluster, tmp_path_factory, synthetic_corpus, rule_server) -> Iterator[App]:
    from ray import serve

    from serving.builder import build_app
    from serving.run import start_serve, wait_until_ready

    root = tmp_path_factory.mktemp("served-indexes")
    config = http_index_config(rule_server.base_url, ray_cluster)
    films, small = root / "films", root / "small"
    build_index(films, config, corpus=Corpus(read_corpus(synthetic_corpus).documents[:12]))
    build_index(small, config, corpus=Corpus(list(SMALL_DOCS)))
    small_deployment = {"num_cpus": 0.1, "autoscaling": {"min_replicas": 1, "max_replicas": 1}}
    settings = QAAppSettings.model_validate(
        {
            "indexes": [
                {"name": "films", "index": str(films), "retriever": "dense"},
                {"name": "small", "index": str(small)},  # the default retriever, the shipped GLM + dense
            ],
            "llm": {
                "backend": "openai",
                "openai": {"base_url": rule_server.base_url, "model": "rule", "prompt_style": "completion"},
            },
            "auth": {"token_env": "HOPRAG_UPDATE_TEST_TOKEN"},
            "request_timeout_s": 30,
            "updates": {"watch_interval_s": 0.5, "max_upload_bytes": 100_000},
            "ingress": {**small_deployment, "env_vars": {"HOPRAG_UPDATE_TEST_TOKEN": TOKEN}},
            "qa": small_deployment,
            "retriever_deployment": small_deployment,
            "llm_deployment": small_deployment,
        }
    )
    port = pick_free_port()
    start_serve("127.0.0.1", port)
    base = f"http://127.0.0.1:{port}"
    serve.run(build_app(settings), name="indexes", route_prefix="/", blocking=False)
    wait_until_ready(base, timeout_s=300, progress=False)
    try:
        yield App(base, films, small)
    finally:
        serve.shutdown()


def _ask(base: str, question: str, index: str | None = None) -> dict:
    body: dict[str, object] = {"question": question, "top_k": 3}
    if index is not None:
        body["index"] = index
    r = httpx.post(f"{base}/v1/qa", json=body, headers=AUTH, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def _titles(answer: dict) -> list[str]:
    return [d["title"] for d in answer["documents"]]


def _wait_for_job(base: str, job_id: str, live: bool = True, timeout_s: float = 240) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        job = httpx.get(f"{base}/v1/jobs/{job_id}", headers=AUTH, timeout=30).json()
        if job["state"] == "failed" or (job["state"] == "succeeded" and (job["live"] or not live)):
            return job
        assert time.monotonic() < deadline, f"job not done in {timeout_s} s: {job}"
        time.sleep(0.5)


def test_each_index_answers_from_its_own_documents_and_reports_its_memory(app: App) -> None:
    small_titles = {d.title for d in SMALL_DOCS}
    assert set(_titles(_ask(app.base, "Who drained Harlow Fen?", "small"))) <= small_titles
    films = _titles(_ask(app.base, "Who drained Harlow Fen?"))  # the default index: films
    assert films and not set(films) & small_titles
    r = httpx.post(f"{app.base}/v1/qa", json={"question": "x", "index": "books"}, headers=AUTH, timeout=30)
    assert r.status_code == 404 and "films, small" in r.json()["error"]["message"]
    listing = httpx.get(f"{app.base}/v1/indexes", headers=AUTH, timeout=30).json()
    assert listing["default"] == "films"
    by_name = {i["name"]: i for i in listing["indexes"]}
    assert by_name["small"]["documents"] == 3 and by_name["films"]["documents"] == 12
    for info in by_name.values():
        assert info["status"] == "ready" and info["snapshot"]
        memory = info["memory"]
        assert memory["qa_replica_rss_bytes"] > 50e6 and memory["retriever_replica_rss_bytes"] > 50e6


def test_an_added_then_deleted_document_shows_in_answers_with_no_failed_request(app: App) -> None:
    assert NEW_DOC["title"] not in _titles(_ask(app.base, QUESTION))
    statuses: Counter[str] = Counter()
    stop = threading.Event()

    def traffic() -> None:  # ~5 requests/s on the index being updated, no client retries
        with httpx.Client(timeout=60, headers=AUTH) as client:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    code = str(client.post(f"{app.base}/v1/qa", json={"question": QUESTION}).status_code)
                except httpx.HTTPError as exc:
                    code = type(exc).__name__
                statuses[code] += 1
                time.sleep(max(0.0, 0.2 - (time.monotonic() - started)))

    load = threading.Thread(target=traffic)
    load.start()
    try:
        submitted = time.monotonic()
        r = httpx.post(f"{app.base}/v1/indexes/films/documents", json=[NEW_DOC], headers=AUTH, timeout=60)
        assert r.status_code == 202, r.text
        job = _wait_for_job(app.base, r.json()["job_id"])
        served_after = time.monotonic() - submitted
        assert job["state"] == "succeeded", job
        assert job["summary"]["documents"] == 13 and job["snapshot"]
        assert NEW_DOC["title"] in _titles(_ask(app.base, QUESTION))
        print(f"a 1-document add was served {served_after:.1f} s after the request")

        r = httpx.delete(
            f"{app.base}/v1/indexes/films/documents/{quote(NEW_DOC['title'])}", headers=AUTH, timeout=60
        )
        assert r.status_code == 202, r.text
        job = _wait_for_job(app.base, r.json()["job_id"])
        assert job["state"] == "succeeded" and job["summary"]["documents"] == 12
        assert NEW_DOC["title"] not in _titles(_ask(app.base, QUESTION))
    finally:
        stop.set()
        load.join()
    assert set(statuses) == {"200"} and statuses["200"] >= 10, statuses
    r = httpx.delete(
        f"{app.base}/v1/indexes/films/documents/{quote(NEW_DOC['title'])}", headers=AUTH, timeout=60
    )
    assert r.status_code == 404  # gone


def test_a_failed_update_leaves_the_served_snapshot_and_answers_unchanged(app: App) -> None:
    before = _ask(app.base, "Who drained Harlow Fen?", "small")
    listing = httpx.get(f"{app.base}/v1/indexes", headers=AUTH, timeout=30).json()
    snapshot = {i["name"]: i for i in listing["indexes"]}["small"]["snapshot"]
    # A damaged index: the update refuses to carry the damage into a new snapshot.
    damaged = app.small / "snapshots" / snapshot / "relation_embeddings.npy"
    original = damaged.read_bytes()
    damaged.write_bytes(original[:-4] + b"\x00\x00\x80\x7f")
    try:
        r = httpx.post(
            f"{app.base}/v1/indexes/small/documents",
            content='{"title": "Dunmere Marsh", "text": "Dunmere Marsh feeds the Quill Sea."}\n',
            headers={**AUTH, "Content-Type": "application/jsonl"},
            timeout=60,
        )
        assert r.status_code == 202, r.text
        job = _wait_for_job(app.base, r.json()["job_id"], live=False)
        assert job["state"] == "failed" and "damaged index" in job["error"], job
        assert job["snapshot"] is None and not job["live"]
    finally:
        damaged.write_bytes(original)
    listing = httpx.get(f"{app.base}/v1/indexes", headers=AUTH, timeout=30).json()
    assert {i["name"]: i for i in listing["indexes"]}["small"]["snapshot"] == snapshot
    after = _ask(app.base, "Who drained Harlow Fen?", "small")
    assert _titles(after) == _titles(before) and after["answer"] == before["answer"]


def test_the_playground_works_with_the_keyboard_alone(app: App, chromium) -> None:
    """Token, question, index picker, Ask, then a document's passage and the graph's zoom, with Tab,
    typing, arrow keys, Enter and Space only: the answer comes from the picked index, the passage
    is that document's text, and the shareable URL names the index."""
    from tests.support.browser import Browser

    with Browser(chromium) as browser:
        browser.open(f"{app.base}/", 1280, 900)
        browser.wait_for("document.getElementById('status').textContent.includes('API token')", timeout_s=30)
        browser.tab_to("token")
        browser.type_text(TOKEN)
        browser.tab_to("question")  # leaving the field stores the token and lists the indexes
        browser.type_text("Who drained Harlow Fen?")
        browser.wait_for("!document.getElementById('index-row').hidden", timeout_s=30)
        assert browser.evaluate("document.getElementById('index').value") == "films"  # the default
        browser.tab_to("index")
        browser.press("ArrowDown")
        assert browser.evaluate("document.getElementById('index').value") == "small"
        browser.tab_to("run")
        browser.press("Enter")
        state = browser.wait_for(
            "['done', 'error'].includes(document.body.dataset.state) && document.body.dataset.state",
            timeout_s=90,
        )
        assert state == "done", browser.evaluate("document.getElementById('error').textContent")
        assert "index=small" in browser.evaluate("location.search")
        titles = browser.evaluate(
            "[...document.querySelectorAll('#documents button.doc')].map(b => b.textContent)"
        )
        by_title = {d.title: d.text for d in SMALL_DOCS}
        assert titles and set(titles) <= set(by_title), titles
        browser.tab_to(f"BUTTON:{titles[0]}")
        browser.press("Enter")
        passage = "document.querySelector('#documents .passage')"
        text = browser.wait_for(f"{passage}.dataset.loaded && {passage}.textContent", timeout_s=30)
        assert text == by_title[titles[0]]
        assert (
            browser.evaluate("document.querySelector('#documents button.doc').getAttribute('aria-expanded')")
            == "true"
        )
        browser.tab_to("graph-zoom")
        browser.press("Space")
        assert (
            browser.evaluate("document.getElementById('graph-zoom').getAttribute('aria-pressed')") == "true"
        )
        assert browser.evaluate("document.getElementById('graph').classList.contains('actual')")
