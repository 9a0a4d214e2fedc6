"""A worker whose database a newer version upgrades while it runs (past the migrations it
knows: its writes may fail from now on, and a run of it would never end) notices at its next
heartbeat, stops taking jobs, and exits with that reason as its last line (review of
2026-11-25, "two versions running at once"). In-process worker, on PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from cluster import pg_execute

from cursor_agent_api.cli.worker import stopped_message
from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.store.errors import SchemaTooNewError
from cursor_agent_api.server.worker import Worker, WorkerSettings


def test_a_schema_upgraded_under_a_worker_stops_it_with_the_reason(db_url: str, tmp_path: Path) -> None:
    settings = ServerSettings(database_url=db_url, roots=(tmp_path,), simulate=True)
    worker = Worker(WorkerSettings(server=settings, name="w-old", heartbeat=0.1))

    async def main() -> None:
        ready = asyncio.Event()
        worker.on_ready = ready.set
        task = asyncio.create_task(worker.run())
        await asyncio.wait({task, asyncio.create_task(ready.wait())},
                           return_when=asyncio.FIRST_COMPLETED)
        assert not task.done(), task.exception()
        await asyncio.to_thread(pg_execute, db_url, "UPDATE alembic_version SET version_num = '9999'")
        await task

    with pytest.raises(SchemaTooNewError) as stopped:
        asyncio.run(asyncio.wait_for(main(), 120))
    assert worker.draining
    line = stopped_message(stopped.value, db_url, started=True)
    assert line == ("the worker stopped: the database was upgraded by a newer cursor-agent-api "
                    "(schema 9999) while this worker ran: upgrade it (docs/distributed.md: "
                    "Upgrading a cluster) (SchemaTooNewError)"), line
