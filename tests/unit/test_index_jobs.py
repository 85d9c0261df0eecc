"""The IndexJobs deployment's bookkeeping, without Serve: uploads on disk before the answer, unknown
titles refused, one job at a time per index, jobs re-run after a restart, `live`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from hoprag.kg.store import write_snapshot
from serving.deployments.index_jobs import IndexJobs, UnknownDocumentError
from serving.settings import QAAppSettings
from serving.snapshots import current_snapshot
from tests.support.film_kg import film_tables


@pytest.fixture(scope="module")
def index(tmp_path_factory, embedder) -> Path:
    out = tmp_path_factory.mktemp("jobs") / "index"
    write_snapshot(out, film_tables(embedder), {"counts": {}})
    return out


class Jobs(IndexJobs.func_or_class):  # type: ignore[misc,name-defined]
    """The deployment class with the Ray task replaced by a recorder (the task is integration-tested)."""

    ran: list[tuple[str, str, list[str]]]
    release: asyncio.Event

    async def _run(self, job: dict[str, Any]) -> None:
        self.ran.append((job["job_id"], job["action"], job["titles"]))
        job.update(state="running")
        self._persist(job)
        await self.release.wait()
        job.update(state="succeeded", snapshot=f"snap-{len(self.ran)}")
        self._produced[job["index"]].append(job["snapshot"])
        self._persist(job)


async def _start(index: Path) -> Jobs:
    jobs = Jobs.__new__(Jobs)
    jobs.ran, jobs.release = [], asyncio.Event()
    await jobs.__init__(QAAppSettings.model_validate({"index": str(index)}))
    return jobs


def test_uploads_are_on_disk_when_accepted_and_run_one_at_a_time(tmp_path: Path, index: Path) -> None:
    async def scenario() -> None:
        jobs = await _start(index)
        first = jobs.submit_add(
            "default", [{"title": "New Film", "text": "New Film was directed by Ann Lee."}]
        )
        second = jobs.submit_delete("default", "My Cousin From Warsaw")
        assert first["state"] == second["state"] == "queued" and not first["live"]
        payload = index / "jobs" / f"{first['job_id']}.jsonl"
        assert json.loads(payload.read_text())["title"] == "New Film"
        with pytest.raises(UnknownDocumentError):
            jobs.submit_delete("default", "No Such Film")
        # a title only a queued add brings may be deleted
        jobs.submit_delete("default", "New Film")
        await asyncio.sleep(0.05)
        assert [r[0] for r in jobs.ran] == [first["job_id"]]  # the others wait their turn
        jobs.release.set()
        await asyncio.sleep(0.05)
        assert [r[1] for r in jobs.ran] == ["add", "delete", "delete"]
        # live: the serving snapshot is the job's, or one a later job wrote
        assert jobs.status(first["job_id"], "snap-1")["live"]
        assert jobs.status(first["job_id"], "snap-3")["live"]
        assert not jobs.status(second["job_id"], "snap-1")["live"]
        assert jobs.status("job-unknown") is None
        for task in jobs._workers:
            task.cancel()

    asyncio.run(scenario())


def test_a_restart_re_runs_what_was_queued_or_running(tmp_path: Path, embedder) -> None:
    index = tmp_path / "index"
    write_snapshot(index, film_tables(embedder), {"counts": {}})
    assert current_snapshot(index)

    async def before_restart() -> str:
        jobs = await _start(index)
        job = jobs.submit_add("default", [{"title": "A", "text": "A is a film."}])
        await asyncio.sleep(0.05)  # running, never released: the replica dies here
        for task in jobs._workers:
            task.cancel()
        return str(job["job_id"])

    async def after_restart(job_id: str) -> None:
        jobs = await _start(index)
        jobs.release.set()
        await asyncio.sleep(0.05)
        assert [r[0] for r in jobs.ran] == [job_id]
        assert jobs.status(job_id)["state"] == "succeeded"
        for task in jobs._workers:
            task.cancel()

    job_id = asyncio.run(before_restart())
    assert json.loads((index / "jobs" / f"{job_id}.json").read_text())["state"] == "running"
    asyncio.run(after_restart(job_id))
