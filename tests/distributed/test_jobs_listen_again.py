"""A worker whose database went away for a few seconds (its connections cut, new ones
refused: a PostgreSQL restart or failover) listens for new jobs again once it is back: a new
run is taken at once, by its notification, not at the next poll. Procrastinate's LISTEN
connection used to give up for good at the first opening refused, without a word (its worker
never noticed: audit 7, every run then waited for the 5 s poll); now it is opened again,
said once when it fails and once when it is back.

The worker's poll for jobs is an hour here, so that a run taken at all was taken by its
notification. The worker runs in this process, its database behind a :class:`PgProxy`
(the API server's is not)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path
from typing import Any

import pytest
from cluster import SIM, pg_execute  # (puts tests/server on the path)
from inproc import InProcServer
from pg_proxy import PgProxy, proxied
from server_helpers import new_chat, wait_run

from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.worker import Worker, WorkerSettings

WITHIN = 60.0
"""A hang's limit only (a run not taken by its notification waits for the hour's poll)."""
SAID_WITHIN = 20.0
"""A hang's limit for each log line (said within a second or two; the old code said none)."""
FAILED = "the job queue's LISTEN connection failed"
BACK = "the job queue's LISTEN connection is back"


def test_a_worker_listens_for_new_jobs_again_after_its_database_came_back(
    db_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    server = InProcServer(tmp_path, db_url, root, uuid.uuid4().hex, dispatch="queue").start()

    def said(line: str) -> bool:
        return any(line in r.getMessage() for r in caplog.records)

    async def until(condition: Any, within: float) -> bool:
        """Whether ``condition()`` came true within ``within`` seconds (checked every 0.1 s)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while not await asyncio.to_thread(condition):
            if loop.time() > deadline:
                return False
            await asyncio.sleep(0.1)
        return True

    async def run_taken(c: Any) -> str:
        """A new run's status once taken (``queued`` still after :data:`WITHIN` s), once
        over (so that the outage below comes between two runs)."""
        chat = await asyncio.to_thread(new_chat, c, workspace=str(root))
        r = await asyncio.to_thread(c.post, f"/api/chats/{chat['id']}/runs",
                                    json={"prompt": "reply with exactly: hi"})
        assert r.status_code == 202, r.text

        def status() -> str:
            return str(c.get(f"/api/runs/{r.json()['id']}").json()["status"])

        current: list[str] = []

        def taken() -> bool:
            current[:] = [status()]
            return current[0] != "queued"

        loop = asyncio.get_running_loop()
        deadline = loop.time() + WITHIN
        while not await asyncio.to_thread(taken) and loop.time() < deadline:
            await asyncio.sleep(0.2)
        if current[0] != "queued":
            current[0] = str((await asyncio.to_thread(wait_run, c, r.json()["id"], WITHIN))["status"])
        return current[0]

    async def main(proxy: PgProxy, through: str) -> list[str]:
        settings = ServerSettings(database_url=through, roots=(root,), agent_binary=SIM,
                                  agent_env={"CURSOR_CONFIG_DIR": str(tmp_path / "cursor-config")})
        worker = Worker(WorkerSettings(server=settings, name="w-listen", job_poll=3600.0))
        listening = asyncio.Event()  # set as Procrastinate's LISTEN connection waits for jobs
        connector = worker.app.connector
        real_loop = connector._loop_notify

        async def loop_notify(**kwargs: Any) -> None:
            listening.set()
            await real_loop(**kwargs)

        connector._loop_notify = loop_notify
        ready = asyncio.Event()
        worker.on_ready = ready.set
        task = asyncio.create_task(worker.run())

        def no_job_left() -> bool:  # (the first run's job over: the outage comes between jobs)
            return not pg_execute(db_url, "SELECT id FROM procrastinate_jobs")

        try:
            await asyncio.wait_for(ready.wait(), 60)
            await asyncio.wait_for(listening.wait(), 60)
            with server.client() as c:
                before = await run_taken(c)
                assert await until(no_job_left, WITHIN)
                listening.clear()
                proxy.stop()  # connections cut, new ones refused
                await until(lambda: said(FAILED), SAID_WITHIN)
                proxy.start()
                with contextlib.suppress(TimeoutError):  # (the old code: never)
                    await asyncio.wait_for(listening.wait(), SAID_WITHIN)
                after = await run_taken(c)
            return [before, after]
        finally:
            worker.stop()
            await asyncio.wait_for(task, 60)

    try:
        with proxied(db_url) as (proxy, through), caplog.at_level("WARNING"):
            statuses = asyncio.run(main(proxy, through))
    finally:
        server.stop()
    assert statuses[0] == "succeeded", statuses
    assert statuses[1] == "succeeded", (statuses, caplog.text[-3000:])  # the old code: queued
    lines = [r.getMessage() for r in caplog.records]
    assert sum(FAILED in line for line in lines) == 1, lines
    assert sum(BACK in line for line in lines) == 1, lines
    assert "Traceback" not in caplog.text, caplog.text
