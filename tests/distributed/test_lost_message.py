"""A run whose worker was lost before its agent said anything says so ("before any event from
its agent"), not "at seq None" (review of 2026-11-24, wave 15). On PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path

from cursor_agent_api.server.dispatch.queue import interrupt_lost_run
from cursor_agent_api.server.hub import Hub
from cursor_agent_api.server.log import EventLog
from cursor_agent_api.server.runs import run_record
from cursor_agent_api.server.store import Store


def test_a_worker_lost_before_any_event_says_so(db_url: str, tmp_path: Path) -> None:
    async def main() -> tuple[str, list[str]]:
        store = Store(db_url)
        await store.start()
        try:
            log = EventLog(store, Hub(), 65536)
            chat = await store.create_chat(workspace=str(tmp_path), model=None, options={}, title="t")
            run = await log.create_run(chat["id"], "hello", lambda r: run_record("queued", r))
            claimed = await store.claim_run(run["id"], worker="w1")
            assert claimed is not None
            assert await interrupt_lost_run(log, claimed)  # its worker died right after the claim
            after = await store.get_run(run["id"])
            assert after is not None
            recs = await store.events_after(chat["id"], 0, 100)
            return str(after["error"]), [str(r.payload["message"]) for r in recs
                                         if (r.type, r.subtype) == ("worker", "lost")]
        finally:
            await store.close()

    error, notes = asyncio.run(asyncio.wait_for(main(), 60))
    said = "worker w1 was lost before any event from its agent; the run was not run again"
    assert (error, notes) == (said, [said])
