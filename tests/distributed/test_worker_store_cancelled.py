"""A worker cancelled while its store opens (a Ctrl-C or SIGTERM during the migrations, the
start cancelled by ``cancelled_by_signals``) closes the store before it ends: its engine and
connections were left open (the pool's connections then dropped without PostgreSQL's goodbye
when the process died). The store's own opening is replaced; no database is needed."""

from __future__ import annotations

import asyncio

import pytest

from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.worker import Worker, WorkerSettings


@pytest.mark.parametrize("how", ["cancelled", "failed"])
def test_a_worker_whose_store_opening_is_cut_short_closes_it(how: str) -> None:
    url = "postgresql+asyncpg://u@127.0.0.1/db"  # (nothing is connected to)
    worker = Worker(WorkerSettings(server=ServerSettings(database_url=url)))
    calls: list[str] = []

    async def main() -> None:
        opening = asyncio.Event()

        async def start() -> None:
            calls.append("start")
            opening.set()
            if how == "failed":
                raise OSError("the migrations' connection broke")
            await asyncio.Event().wait()  # the migrations, held

        async def close() -> None:
            calls.append("close")

        worker.store.start = start  # type: ignore[method-assign]
        worker.store.close = close  # type: ignore[method-assign]
        task = asyncio.create_task(worker.run())
        await opening.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError if how == "cancelled" else OSError):
            await task

    asyncio.run(asyncio.wait_for(main(), 60))
    assert calls == ["start", "close"], calls
