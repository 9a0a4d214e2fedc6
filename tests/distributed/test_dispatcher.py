"""The queue dispatcher on Procrastinate's in-memory connector (no PostgreSQL, no worker)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from procrastinate import App
from procrastinate.testing import InMemoryConnector

from cursor_agent_api.server.dispatch.jobs import TASK_NAME
from cursor_agent_api.server.dispatch.queue import QueueDispatcher
from cursor_agent_api.server.hub import Hub
from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.store import ActiveRunError, Store


def _run(tmp_path: Path, body):  # type: ignore[no-untyped-def]
    async def main():  # type: ignore[no-untyped-def]
        store = Store(f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite3'}")
        await store.start()
        connector = InMemoryConnector()
        app = App(connector=connector)
        settings = ServerSettings(token="t" * 16, database_url=store.url, dispatch="queue", queue="runs")
        dispatcher = QueueDispatcher(settings, store, Hub(), app=app)
        try:
            async with app.open_async():
                chat = await store.create_chat(workspace=str(tmp_path), model=None, options={}, title="t")
                return await body(dispatcher, connector, store, chat)
        finally:
            await store.close()

    return asyncio.run(main())


def test_a_run_is_deferred_as_one_job_locked_on_its_chat(tmp_path: Path) -> None:
    async def body(dispatcher, connector, store, chat):  # type: ignore[no-untyped-def]
        run = await dispatcher.submit(chat, "hello")
        with pytest.raises(ActiveRunError):  # one active run per chat, as in-process
            await dispatcher.submit(chat, "again")
        return run, list(connector.jobs.values()), await store.get_run(run["id"])

    run, jobs, stored = _run(tmp_path, body)
    assert run["status"] == "queued"
    assert len(jobs) == 1
    job = jobs[0]
    assert job["task_name"] == TASK_NAME
    assert job["lock"] == stored["chat_id"] and job["queue_name"] == "runs"
    assert job["args"] == {"run_id": run["id"]}, "events and prompts never travel through the queue"
    assert stored["job_id"] == job["id"] and stored["queue"] == "runs"


def test_cancelling_a_queued_run_cancels_its_job_and_marks_the_run(tmp_path: Path) -> None:
    async def body(dispatcher, connector, store, chat):  # type: ignore[no-untyped-def]
        run = await dispatcher.submit(chat, "hello")
        await dispatcher.cancel(run["id"], wait=5)
        events = await store.events_after(chat["id"], 0, 10)
        return await store.get_run(run["id"]), list(connector.jobs.values()), events

    run, jobs, events = _run(tmp_path, body)
    assert run["status"] == "cancelled"
    assert [j["status"] for j in jobs] == ["cancelled"], "no worker will take it"
    assert [(e.type, e.subtype) for e in events] == [("run", "queued"), ("run", "cancelled")]
