"""What a run whose worker was lost says: "before any event from its agent", not "at seq None"
(review of 2026-11-24, wave 15); the seq its worker reached when its end was written, not when
the sweep read it (wave 16). On PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from cursor_agent_api.server.dispatch.queue import interrupt_lost_run
from cursor_agent_api.server.hub import Hub
from cursor_agent_api.server.log import EventLog
from cursor_agent_api.server.runs import run_record
from cursor_agent_api.server.store import NewRecord, Store
from cursor_agent_api.server.turns import FoldedBatch, append_folded, load_run_fold


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


def test_a_worker_lost_after_it_wrote_more_names_the_seq_it_reached(db_url: str, tmp_path: Path) -> None:
    """Review of 2026-11-24, wave 16: the sweep read the run, then its worker (stopped, not
    dead) went on writing before the end was committed: the ``worker/lost`` record and the
    run's error named the seq of the read (141), not the one the worker had reached (604).
    Now both are built with the end, from the run as stored then."""

    async def main() -> tuple[int, str, list[tuple[str, Any]]]:
        store = Store(db_url)
        await store.start()
        try:
            log = EventLog(store, Hub(), 65536)
            chat = await store.create_chat(workspace=str(tmp_path), model=None, options={}, title="t")
            run = await log.create_run(chat["id"], "hello", lambda r: run_record("queued", r))
            claimed = await store.claim_run(run["id"], worker="w1")
            assert claimed is not None
            stale = await store.get_run(run["id"])  # what the sweep read
            assert stale is not None
            fold = await load_run_fold(store, chat["id"], run["id"])
            for n in range(3):  # the worker, resumed, writes on
                rec = NewRecord("agent", "assistant", None, {"type": "assistant", "data": {"n": n}},
                                "{}", run["id"])
                written = await append_folded(
                    log, FoldedBatch(chat["id"], run["id"], [rec], [()], 0, fold.turn()))
            assert await interrupt_lost_run(log, stale)
            after = await store.get_run(run["id"])
            assert after is not None
            recs = await store.events_after(chat["id"], 0, 100)
            return written[-1].seq, str(after["error"]), [
                (str(r.payload["message"]), r.payload["seq"]) for r in recs
                if (r.type, r.subtype) == ("worker", "lost")]
        finally:
            await store.close()

    reached, error, notes = asyncio.run(asyncio.wait_for(main(), 60))
    said = f"worker w1 was lost at seq {reached}; the run was not run again"
    assert (error, notes) == (said, [(said, reached)])
