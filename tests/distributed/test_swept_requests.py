"""The sweep that ends a lost worker's ACP run closes its open requests with it (review of
2026-11-24, wave 13).

A worker's requests were closed (``answered``, ``cancelled``) by the worker itself as its run
ended, even after a sweep had ended the run: records after the run's final record. Those
writes are refused now (only while the run is active), so the sweep's end closes them, in
its own transaction, before its ``run/interrupted`` record: a request of a swept run is
never left open (an answer to it is a 409, not a relay that no worker takes). In-process,
on PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api.server.dispatch.queue import interrupt_lost_run
from cursor_agent_api.server.hub import Hub
from cursor_agent_api.server.log import EventLog
from cursor_agent_api.server.requests import AlreadyAnsweredError, RunRequests, pair_requests, request_records
from cursor_agent_api.server.runs import answered_or_unknown, run_record
from cursor_agent_api.server.store import Store


def test_the_sweep_closes_the_open_requests_of_the_run_it_ends(db_url: str, tmp_path: Path) -> None:
    async def main() -> tuple[list[dict[str, Any]], list[tuple[str | None, str | None]], str]:
        store = Store(db_url)
        await store.start()
        try:
            log = EventLog(store, Hub(), 65536)
            chat = await store.create_chat(workspace=str(tmp_path), model=None,
                                           options={"transport": "acp"}, title="t")
            run = await log.create_run(chat["id"], "hi", lambda r: run_record("queued", r))
            claimed = await store.claim_run(run["id"], server_id="gone:1:1", worker="w9", worker_id=999999)
            assert claimed is not None
            requests = RunRequests(log, chat["id"], run["id"], None)  # the worker's, waiting
            asked = asyncio.ensure_future(requests.ask("plan", {"name": "p", "plan": "…"}))
            while not requests.open_count():
                await asyncio.sleep(0)
            row = await store.get_run(run["id"])
            assert row is not None and await interrupt_lost_run(log, row)
            asked.cancel()
            await asyncio.gather(asked, return_exceptions=True)
            pairs = pair_requests(await request_records(store, [run["id"]]))
            recs = await store.events_after(chat["id"], 0, 100)
            with pytest.raises(AlreadyAnsweredError) as late:
                await answered_or_unknown(store, run["id"], pairs[0]["request"]["request_id"])
            return pairs, [(r.type, r.subtype) for r in recs], str(late.value)
        finally:
            await store.close()

    pairs, recs, late = asyncio.run(main())
    assert [(p["answer"] or {}).get("decision") for p in pairs] == ["cancelled"]
    assert pairs[0]["answer"]["by"] == "restart" and "lost" in pairs[0]["answer"]["reason"]
    assert recs == [("run", "queued"), ("request", "plan"), ("request", "answered"), ("worker", "lost"),
                    ("run", "interrupted")]
    assert "already has its answer" in late
