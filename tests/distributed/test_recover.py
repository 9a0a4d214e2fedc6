"""A worker that starts stops the agent groups recorded by dead workers of its host."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
from pathlib import Path

from server_helpers import alive

from cursor_agent_api.server.models import RunStatus
from cursor_agent_api.server.procs import process_start_time
from cursor_agent_api.server.runs import run_record
from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.worker import Worker, WorkerSettings


def _dead_identity() -> str:
    """``host:pid:start`` of a process of this host that has exited."""
    proc = subprocess.Popen(["true"])
    start = process_start_time(proc.pid)
    proc.wait()
    return f"{socket.gethostname()}:{proc.pid}:{start}"


def test_a_starting_worker_stops_the_groups_of_dead_workers_and_marks_their_runs(
    db_url: str, tmp_path: Path
) -> None:
    agent = subprocess.Popen(["sleep", "60"], start_new_session=True)  # a leftover agent group
    bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        settings = WorkerSettings(server=ServerSettings(database_url=db_url, roots=(tmp_path,)), name="w9")
        worker = Worker(settings)

        async def main() -> tuple[list[str], dict[str, object] | None]:
            await worker.store.start()
            try:
                chat = await worker.store.create_chat(
                    workspace=str(tmp_path), model=None, options={}, title="t"
                )
                run = await worker.log.create_run(chat["id"], "hi", lambda r: run_record("queued", r))
                await worker.store.claim_run(run["id"], server_id=_dead_identity(), worker="w-dead")
                await worker.store.update_run(
                    run["id"],
                    pgid=agent.pid,
                    pid=agent.pid,
                    proc_start=process_start_time(agent.pid),
                    last_seq=1,
                )
                other = await worker.store.create_chat(
                    workspace=str(tmp_path), model=None, options={}, title="u"
                )
                live = await worker.log.create_run(other["id"], "hi", lambda r: run_record("queued", r))
                # Owned by a live process of this host (this one): left alone.
                await worker.store.claim_run(live["id"], server_id=worker.identity, worker="w9")
                marked = await worker.recover()
                return marked, await worker.store.get_run(run["id"])
            finally:
                await worker.store.close()

        marked, run = asyncio.run(main())
        assert run is not None and marked == [run["id"]]
        assert run["status"] == RunStatus.INTERRUPTED.value and run["error_type"] == "WorkerLost"
        agent.wait(10)
        assert not alive(agent.pid)
        assert alive(bystander.pid)
    finally:
        for p in (agent, bystander):
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()


def test_the_sweep_gives_up_a_run_whose_api_server_died_before_queueing_it(
    db_url: str, tmp_path: Path
) -> None:
    from cursor_agent_api.server.dispatch.queue import UNQUEUED_AFTER, QueueDispatcher
    from cursor_agent_api.server.hub import Hub
    from cursor_agent_api.server.store import Store

    async def main() -> tuple[dict[str, object] | None, dict[str, object] | None]:
        store = Store(db_url)
        await store.start()
        settings = ServerSettings(database_url=db_url, roots=(tmp_path,), dispatch="queue")
        dispatcher = QueueDispatcher(settings, store, Hub())
        try:
            async with dispatcher.app.open_async():
                chat = await store.create_chat(workspace=str(tmp_path), model=None, options={}, title="t")
                old = await dispatcher.log.create_run(chat["id"], "hi", lambda r: run_record("queued", r))
                await store.update_run(
                    old["id"], created_ms=old["created_ms"] - int(UNQUEUED_AFTER * 1000) - 1
                )
                other = await store.create_chat(workspace=str(tmp_path), model=None, options={}, title="u")
                fresh = await dispatcher.log.create_run(other["id"], "hi", lambda r: run_record("queued", r))
                await dispatcher.sweep()
                return await store.get_run(old["id"]), await store.get_run(fresh["id"])
        finally:
            await store.close()

    old, fresh = asyncio.run(main())
    assert old is not None and old["status"] == "interrupted" and old["error_type"] == "NotQueued"
    assert fresh is not None and fresh["status"] == "queued", "a run just stored is being queued"


def test_processes_starting_at_once_on_a_fresh_database_all_migrate_it(db_url: str) -> None:
    """A cluster started at once (API servers and workers) migrates the database once."""
    import sys

    code = (
        "import asyncio, sys\n"
        "from cursor_agent_api.server.store import Store\n"
        "async def main():\n"
        "    s = Store(sys.argv[1]); await s.start(); await s.close()\n"
        "asyncio.run(main())\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, db_url], stderr=subprocess.PIPE) for _ in range(3)
    ]
    errors = [p.communicate(timeout=120)[1].decode()[-500:] for p in procs]
    assert [p.returncode for p in procs] == [0] * 3, errors
