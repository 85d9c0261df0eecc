"""The IndexJobs deployment: document updates of the served indexes, as background Ray tasks.

``POST /v1/indexes/{name}/documents`` and ``DELETE .../documents/{title}`` become jobs here. A
job's upload is written to disk before the request is answered (``<index>/jobs/<id>.jsonl``, the
job record beside it), so a restarted IndexJobs replica re-runs what was queued or running: an
accepted update is never lost. Jobs of one index run one after another; each runs
:func:`indexing.update.update_index_documents` in its own Ray task (not inside a serving replica),
which writes a new snapshot atomically. A failed job leaves the served snapshot as it was. The QA
and Retriever replicas pick a new snapshot up themselves (:mod:`serving.snapshots`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import Any

from ray import serve

from hoprag.atomic import atomic_file, atomic_write_json
from serving.settings import QAAppSettings

logger = logging.getLogger("ray.serve")

JOBS_DIR = "jobs"
MAX_PENDING_JOBS = 32  # per index: past it an upload is refused (503) instead of piling up on disk


class UnknownDocumentError(KeyError):
    """A delete named a title the index does not hold."""


class TooManyJobsError(RuntimeError):
    """An index already has :data:`MAX_PENDING_JOBS` jobs waiting."""


def _write_json(path: Path, payload: Any) -> None:
    atomic_write_json(path, payload)


def _failure_message(exc: BaseException) -> str:
    """What went wrong, in one or two lines (a Ray task error carries the task's exception)."""
    cause = getattr(exc, "cause", None) or exc
    text = f"{type(cause).__name__}: {cause}".strip()
    return text if len(text) <= 2000 else text[:2000] + " ..."


def apply_update_job(index_dir: str, action: str, payload: str | None, titles: list[str]) -> dict[str, Any]:
    """The body of a job's Ray task."""
    from indexing.update import read_documents_jsonl, update_index_documents

    documents = read_documents_jsonl(Path(payload)) if payload else []
    outcome = update_index_documents(index_dir, action, documents=documents, titles=titles)  # type: ignore[arg-type]
    return {"snapshot": outcome.snapshot, "summary": outcome.summary}


@serve.deployment(name="IndexJobs")
class IndexJobs:
    async def __init__(self, settings: QAAppSettings) -> None:  # type: ignore[misc]
        self._settings = settings
        self._index_dirs = {s.name: Path(s.index) for s in settings.served_indexes}
        self._jobs: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._queues: dict[str, asyncio.Queue[str]] = {name: asyncio.Queue() for name in self._index_dirs}
        self._produced: dict[str, list[str]] = {name: [] for name in self._index_dirs}
        self._workers = [asyncio.create_task(self._drain(name)) for name in self._index_dirs]
        if settings.updates.enabled:
            self._recover()

    # -- bookkeeping ---------------------------------------------------------------------------
    def _jobs_dir(self, index: str, create: bool = True) -> Path:
        """``<index>/jobs``, created on the first upload only (a read-only index volume serves fine
        while nobody uploads)."""
        path = self._index_dirs[index] / JOBS_DIR
        if create:
            path.mkdir(parents=True, exist_ok=True)
        return path

    def _persist(self, job: dict[str, Any]) -> None:
        _write_json(self._jobs_dir(job["index"]) / f"{job['job_id']}.json", job)

    def _recover(self) -> None:
        """Jobs from before a restart: finished ones stay queryable, unfinished ones run again."""
        for index in self._index_dirs:
            records = []
            for path in sorted(self._jobs_dir(index, create=False).glob("*.json")):
                try:
                    records.append(json.loads(path.read_text(encoding="utf-8")))
                except (OSError, ValueError) as exc:
                    logger.warning("skipping unreadable job record %s: %s", path, exc)
            for job in sorted(records, key=lambda j: j.get("submitted_at", 0)):
                self._jobs[job["job_id"]] = job
                if job["state"] in ("queued", "running"):
                    job["state"] = "queued"
                    self._queues[index].put_nowait(job["job_id"])
                    logger.info(
                        "re-running job %s (%s on %s) after a restart", job["job_id"], job["action"], index
                    )
                elif job["state"] == "succeeded" and job.get("snapshot"):
                    self._produced[index].append(job["snapshot"])

    def _new_job(self, index: str, action: str, count: int, titles: list[str]) -> dict[str, Any]:
        if index not in self._index_dirs:
            raise KeyError(index)
        if self._queues[index].qsize() >= MAX_PENDING_JOBS:
            raise TooManyJobsError(f"index {index!r} has {MAX_PENDING_JOBS} updates waiting; retry later")
        return {
            "job_id": f"job-{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:8]}",
            "index": index,
            "action": action,
            "state": "queued",
            "documents": count,
            "titles": titles,
            "submitted_at": time.time(),
            "started_at": None,
            "finished_at": None,
            "snapshot": None,
            "summary": None,
            "error": None,
        }

    def _enqueue(self, job: dict[str, Any]) -> dict[str, Any]:
        self._persist(job)
        self._jobs[job["job_id"]] = job
        self._queues[job["index"]].put_nowait(job["job_id"])
        self._forget_old()
        return self._public(job, None)

    def _forget_old(self) -> None:
        finished = [j for j in self._jobs.values() if j["state"] in ("succeeded", "failed")]
        for job in finished[: max(0, len(finished) - self._settings.updates.keep_jobs)]:
            del self._jobs[job["job_id"]]
            for suffix in (".json", ".jsonl"):
                (self._jobs_dir(job["index"]) / f"{job['job_id']}{suffix}").unlink(missing_ok=True)

    # -- the API the ingress calls -------------------------------------------------------------
    def submit_add(self, index: str, documents: list[dict[str, str]]) -> dict[str, Any]:
        """Queue an add of ``documents`` (``{"title", "text"}``); the upload is on disk on return."""
        job = self._new_job(index, "add", len(documents), [])
        payload = self._jobs_dir(index) / f"{job['job_id']}.jsonl"
        with atomic_file(payload) as fh:
            for doc in documents:
                fh.write(json.dumps({"title": doc["title"], "text": doc["text"]}) + "\n")
        return self._enqueue(job)

    def submit_delete(self, index: str, title: str) -> dict[str, Any]:
        """Queue the removal of document ``title``; :class:`UnknownDocumentError` if the index
        (its current snapshot) has no such document."""
        import pyarrow.parquet as pq

        from hoprag.kg.store import read_manifest

        index_dir = self._index_dirs.get(index)
        if index_dir is None:
            raise KeyError(index)
        snapshot = index_dir / read_manifest(index_dir)["snapshot"]
        known = pq.read_table(snapshot / "documents.parquet", columns=["title"]).column("title").to_pylist()
        pending_adds = {
            t
            for j in self._jobs.values()
            if j["index"] == index and j["action"] == "add" and j["state"] in ("queued", "running")
            for t in self._payload_titles(j)
        }
        if title not in known and title not in pending_adds:
            raise UnknownDocumentError(title)
        return self._enqueue(self._new_job(index, "delete", 1, [title]))

    def _payload_titles(self, job: dict[str, Any]) -> list[str]:
        from indexing.update import read_documents_jsonl

        path = self._jobs_dir(job["index"]) / f"{job['job_id']}.jsonl"
        return [title for title, _ in read_documents_jsonl(path)] if path.exists() else []

    def status(self, job_id: str, serving_snapshot: str | None = None) -> dict[str, Any] | None:
        """A job's record (None if unknown), with ``live``: whether ``serving_snapshot`` (what the
        index's QA replica answers from) is the job's snapshot or one written after it."""
        job = self._jobs.get(job_id)
        return None if job is None else self._public(job, serving_snapshot)

    def _public(self, job: dict[str, Any], serving_snapshot: str | None) -> dict[str, Any]:
        live = False
        produced = self._produced[job["index"]]
        if job["state"] == "succeeded" and serving_snapshot:
            if serving_snapshot == job["snapshot"]:
                live = True
            elif job["snapshot"] in produced and serving_snapshot in produced:
                live = produced.index(serving_snapshot) >= produced.index(job["snapshot"])
        out = {k: v for k, v in job.items() if k != "titles"}
        out["live"] = live
        return out

    def index_of(self, job_id: str) -> str | None:
        job = self._jobs.get(job_id)
        return None if job is None else str(job["index"])

    # -- running jobs --------------------------------------------------------------------------
    async def _drain(self, index: str) -> None:
        queue = self._queues[index]
        while True:
            job_id = await queue.get()
            try:
                await self._run(self._jobs[job_id])
            except Exception:  # never let one job stop the index's queue
                logger.exception("job %s: unexpected failure in the job runner", job_id)

    async def _run(self, job: dict[str, Any]) -> None:
        import ray

        index_dir = self._index_dirs[job["index"]]
        job.update(state="running", started_at=time.time())
        self._persist(job)
        payload = index_dir / JOBS_DIR / f"{job['job_id']}.jsonl"
        task = ray.remote(apply_update_job).options(
            num_cpus=self._settings.updates.job_num_cpus, max_retries=0, name=f"hoprag-update-{job['index']}"
        )
        try:
            result = await task.remote(
                str(index_dir), job["action"], str(payload) if payload.exists() else None, job["titles"]
            )
        except Exception as exc:
            job.update(state="failed", error=_failure_message(exc), finished_at=time.time())
            logger.warning(
                "job %s (%s on %s) failed: %s", job["job_id"], job["action"], job["index"], job["error"]
            )
        else:
            job.update(
                state="succeeded",
                snapshot=result["snapshot"],
                summary=result["summary"],
                finished_at=time.time(),
            )
            self._produced[job["index"]].append(result["snapshot"])
            logger.info(
                "job %s (%s on %s) wrote snapshot %s",
                job["job_id"],
                job["action"],
                job["index"],
                job["snapshot"],
            )
        self._persist(job)
        if job["state"] == "succeeded":  # a failed upload stays beside its record until forgotten
            payload.unlink(missing_ok=True)
