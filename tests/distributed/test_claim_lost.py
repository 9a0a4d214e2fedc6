"""A worker's claim that loses its connection (the database restarted, the connection cut):
the run stays queued, for a new job, and the worker says so in one WARNING line — not an
ERROR "could not be run on this worker" with tracebacks and the claim's SQL and parameters
(review of 2026-11-24, wave 15). In-process worker, on PostgreSQL."""

from __future__ import annotations

import asyncio
import errno
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy.exc import DBAPIError

from cursor_agent_api.server.runs import run_record
from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.worker import Worker, WorkerSettings


def test_a_claim_that_loses_its_connection_is_one_warning(
    db_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = ServerSettings(database_url=db_url, roots=(tmp_path,), simulate=True,
                              agent_env={"CURSOR_CONFIG_DIR": str(tmp_path / "cursor-config")})
    worker = Worker(WorkerSettings(server=settings, name="w1"))
    store, log = worker.store, worker.log

    async def main() -> dict[str, Any]:
        await store.start()
        try:
            chat = await store.create_chat(workspace=str(tmp_path), model=None, options={"trust": True},
                                           title="t")
            run = await log.create_run(chat["id"], "hello", lambda r: run_record("queued", r))

            async def cut(run_id: str, **owner: Any) -> None:
                raise DBAPIError("UPDATE runs SET status=$1 WHERE runs.id = $2", ("running", "secret-42"),
                                 ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"),
                                 connection_invalidated=True)

            store.claim_run = cut  # type: ignore[method-assign]
            job = SimpleNamespace(id=1, worker_id=None, queue="runs")
            with pytest.raises(DBAPIError):  # the job fails; the sweep gives the run a new one
                await worker._job(SimpleNamespace(job=job, abort_reason=lambda: None), run["id"])
            after = await store.get_run(run["id"])
            assert after is not None
            return after
        finally:
            await worker.runs.shutdown()
            await store.close()

    with caplog.at_level("INFO", logger="cursor_agent_api"):
        run = asyncio.run(asyncio.wait_for(main(), 120))
    assert run["status"] == "queued"
    said = [(r.levelname, r.getMessage(), r.exc_info) for r in caplog.records
            if r.name == "cursor_agent_api.worker"]
    assert said == [("WARNING", f"run {run['id']} was not claimed by this worker ([Errno 104] "
                     "Connection reset by peer (DBAPIError)): it stays queued, for a new job", None)], said
    assert "UPDATE" not in caplog.text and "secret-42" not in caplog.text
