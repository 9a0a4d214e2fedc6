"""A worker's run ended by an API server between the worker's claim and its start is not set
running again (review of 2026-11-24, wave 13).

The claim moves the run ``queued`` → ``running``; then the worker derives the workspace,
resets the chat's context if its previous turn ran on another worker, and records the run's
start (``run/running``). An API server's sweep may end the run meanwhile (the worker looked
lost): the start, and the ``context/reset`` record, were written after that end all the
same, the run was set ``running`` again and run. Now they are written only while the run is
active; the worker leaves the run as the sweep ended it, starts no agent, and says so. The
race is made deterministic by a hook on the claim. In-process worker, on PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import update

from cursor_agent_api.server.dispatch.queue import interrupt_lost_run
from cursor_agent_api.server.models import chats
from cursor_agent_api.server.runs import run_record
from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.worker import Worker, WorkerSettings


@pytest.mark.parametrize("chat_kind", ["new", "moved"], ids=["a-new-chat", "a-chat-from-another-worker"])
def test_a_run_the_sweep_ended_after_the_claim_is_not_started(
    db_url: str, tmp_path: Path, chat_kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = ServerSettings(database_url=db_url, roots=(tmp_path,), simulate=True,
                              agent_env={"CURSOR_CONFIG_DIR": str(tmp_path / "cursor-config")})
    worker = Worker(WorkerSettings(server=settings, name="w1"))
    store, log = worker.store, worker.log

    async def main() -> tuple[str, dict[str, Any], list[tuple[str | None, str | None]], dict[str, Any]]:
        await store.start()
        try:
            chat = await store.create_chat(workspace=str(tmp_path), model=None, options={"trust": True},
                                           title="t")
            if chat_kind == "moved":  # its previous turn ran on worker w0, which held its Cursor chat
                before = await log.create_run(chat["id"], "earlier", lambda r: run_record("queued", r))
                await store.claim_run(before["id"], worker="w0")
                await store.update_run(before["id"], status="succeeded")
                async with store.transaction() as conn:
                    await conn.execute(update(chats).where(chats.c.id == chat["id"]).values(session_id="s0"))
            run = await log.create_run(chat["id"], "hello", lambda r: run_record("queued", r))
            claim = store.claim_run

            async def claim_then_swept(run_id: str, **owner: Any) -> dict[str, Any] | None:
                claimed = await claim(run_id, **owner)
                assert claimed is not None
                assert await interrupt_lost_run(log, claimed)  # an API server's sweep
                return claimed

            store.claim_run = claim_then_swept  # type: ignore[method-assign]
            job = SimpleNamespace(id=1, worker_id=None, queue="runs")
            said = await worker._job(SimpleNamespace(job=job, abort_reason=lambda: None), run["id"])
            after = await store.get_run(run["id"])
            assert after is not None
            recs = await store.events_after(chat["id"], 0, 10_000)
            end = next(r.seq for r in recs
                       if r.run_id == run["id"] and (r.type, r.subtype) == ("run", "interrupted"))
            fresh = await store.get_chat(chat["id"])
            assert fresh is not None
            return said, after, [(r.type, r.subtype) for r in recs if r.seq > end], fresh
        finally:
            await worker.runs.shutdown()
            await store.close()

    with caplog.at_level("WARNING", logger="cursor_agent_api"):
        said, run, later, chat = asyncio.run(asyncio.wait_for(main(), 120))
    assert (run["status"], run["error_type"]) == ("interrupted", "WorkerLost"), "not set running again"
    assert run["started_ms"] is None and run["pid"] is None
    assert later == [], "nothing after the run's end (no run/running, no agent, no context/reset)"
    assert said == "interrupted"
    assert "is already interrupted (ended by another process)" in caplog.text
    assert "Traceback" not in caplog.text
    if chat_kind == "moved":
        assert chat["session_id"] == "s0", "the chat's context is not reset by a run that is over"
