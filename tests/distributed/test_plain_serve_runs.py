"""The queue servers' sweep leaves alone the runs of a ``serve`` without ``--dispatch queue``
on the same database (review of 2026-11-25): a run waiting under its ``--max-runs`` (queued,
no job, as every such run is) was ended ``interrupted`` a minute later, "the API server that
accepted this run stopped before it was queued". Only a run meant for the queue (no
``server_id`` until a worker claims it) is one the sweep gives up. On PostgreSQL."""

from __future__ import annotations

import asyncio

from cursor_agent_api.server.runs import run_record
from cursor_agent_api.server.store import Store, now_ms


def test_the_unqueued_sweep_takes_only_the_queues_runs(db_url: str) -> None:
    async def main() -> tuple[list[str], str, str]:
        store = Store(db_url)
        await store.start()
        try:
            chat_a = await store.create_chat(workspace="/w", model=None, options={}, title="a")
            chat_b = await store.create_chat(workspace="/w", model=None, options={}, title="b")
            queued = lambda r: run_record("queued", r)  # noqa: E731
            plain, _ = await store.create_run(chat_a["id"], "waits under --max-runs", queued,
                                              server_id="host-1:4242:99")
            lost, _ = await store.create_run(chat_b["id"], "its job never deferred", queued)
            found = await store.unqueued_runs(now_ms() + 60_000)
            return [r["id"] for r in found], plain["id"], lost["id"]
        finally:
            await store.close()

    found, plain, lost = asyncio.run(main())
    assert found == [lost], (found, plain)
