"""A run whose workspace lies outside the roots of the worker that took it fails saying so,
worded for the worker: whose roots they are and that the *worker* is to be started with
``--root`` (it said "start the server with --root", though the server allowed the workspace;
review of 2026-11-25). In-process worker, on PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from cursor_agent_api.server.runs import run_record
from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.worker import Worker, WorkerSettings


def test_a_workspace_outside_the_workers_roots_says_start_the_worker_with_root(
        db_url: str, tmp_path: Path) -> None:
    ours, theirs = tmp_path / "worker-root", tmp_path / "server-root"
    ours.mkdir()
    theirs.mkdir()
    settings = ServerSettings(database_url=db_url, roots=(ours.resolve(),), simulate=True,
                              agent_env={"CURSOR_CONFIG_DIR": str(tmp_path / "cursor-config")})
    worker = Worker(WorkerSettings(server=settings, name="w-roots"))
    store, log = worker.store, worker.log

    async def main() -> dict[str, Any]:
        await store.start()
        try:
            chat = await store.create_chat(workspace=str(theirs.resolve()), model=None, options={},
                                           title="t")
            run = await log.create_run(chat["id"], "hello", lambda r: run_record("queued", r))
            job = SimpleNamespace(id=1, worker_id=None, queue="runs")
            await worker._job(SimpleNamespace(job=job, abort_reason=lambda: None), run["id"])
            after = await store.get_run(run["id"])
            assert after is not None
            return after
        finally:
            await worker.runs.shutdown()
            await store.close()

    run = asyncio.run(asyncio.wait_for(main(), 120))
    assert run["status"] == "failed", run
    assert run["error"] == (f"workspace {str(theirs.resolve())!r} is outside worker w-roots's roots "
                            f"({ours.resolve()}): start the worker with --root to allow another "
                            "directory"), run["error"]
