"""The server's start-up when the database cannot be written, and a start-up that fails."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api.server import ServerSettings, create_app
from cursor_agent_api.server.runs import RunManager, run_record
from cursor_agent_api.server.store import StoreUnavailableError

DEAD_SERVER = f"{socket.gethostname()}:999999999:1"  # this host, a pid no process has


def _settings(db_url: str, tmp_path: Path) -> ServerSettings:
    return ServerSettings(token="t" * 16, database_url=db_url, roots=(tmp_path,), simulate=True)


async def _left_by_a_dead_server(store: Any, tmp_path: Path) -> str:
    chat = await store.create_chat(workspace=str(tmp_path), model=None, options={}, title="t")
    run, _ = await store.create_run(chat["id"], "hi", lambda r: run_record("queued", r),
                                    server_id=DEAD_SERVER)
    return str(run["id"])


def test_a_restart_while_the_database_cannot_be_written_serves_and_recovers_later(
        db_url: str, tmp_path: Path) -> None:
    """A crash left a run active; the restart finds the database failing its writes (a lock
    held by another process, a full disk): the server starts anyway and marks the run
    interrupted once the writes go through (before: the start-up failed with a traceback,
    and the process hung)."""
    app = create_app(_settings(db_url, tmp_path))
    store = app.state.store

    async def scenario() -> tuple[bool, list[str], str]:
        await store.start()  # as `serve` does before the start-up
        run_id = await _left_by_a_dead_server(store, tmp_path)
        store.faults.fail_writes(3)
        async with app.router.lifespan_context(app):
            recovery = app.state.recovery
            pending = not recovery.done
            marked = await recovery.wait()
            status = (await store.get_run(run_id))["status"]
        return pending, [m == run_id for m in marked], status

    assert asyncio.run(scenario()) == (True, [True], "interrupted")


def test_a_start_up_that_fails_closes_the_store(
        db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever fails in the start-up, what it opened is closed: the store's driver thread
    kept the process alive after uvicorn's "Application startup failed. Exiting."."""

    async def broken(self: RunManager) -> list[str]:
        raise RuntimeError("a bug in the recovery")

    monkeypatch.setattr(RunManager, "recover", broken)
    app = create_app(_settings(db_url, tmp_path))
    store = app.state.store

    async def scenario() -> None:
        with pytest.raises(RuntimeError, match="a bug in the recovery"):
            async with app.router.lifespan_context(app):
                pass  # pragma: no cover - the start-up fails

    asyncio.run(scenario())
    with pytest.raises(StoreUnavailableError, match="the database is closed"):
        store.engine  # noqa: B018 - closed: the engine is gone
