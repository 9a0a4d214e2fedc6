"""A run's end is recorded once, by whoever ends it first (review of 2026-11-24, wave 10): a
late end never overwrites a final status. In distributed mode an API server's sweep may
mark a worker's run ``interrupted`` (its worker looked lost) while the worker still runs
it; the worker's end, when it comes, must leave ``interrupted`` and add no second end
record (it turned into ``succeeded``). On SQLite; the same SQL serves PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api.server.dispatch import run_ends
from cursor_agent_api.server.hub import Hub
from cursor_agent_api.server.log import EventLog
from cursor_agent_api.server.models import RunStatus
from cursor_agent_api.server.runs import RunManager, run_record
from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.store import NewRecord, RunEndedError, Store


def _ends(tmp_path: Path, first: str | None) -> tuple[dict[str, Any], list[tuple[str, str | None]]]:
    """A running run; ``first`` (if any) ends it through the sweep's path; then the run
    manager records its own end, ``succeeded``. The run, and its ``run`` records."""

    async def main() -> tuple[dict[str, Any], list[tuple[str, str | None]]]:
        url = f"sqlite+aiosqlite:///{tmp_path}/db.sqlite3"
        store = Store(url)
        await store.start()
        try:
            log = EventLog(store, Hub(), 65536)
            runs = RunManager(ServerSettings(token="t" * 16, database_url=url, simulate=True), log)
            chat = await store.create_chat(workspace=str(tmp_path), model=None, options={}, title="t")
            run = await log.create_run(chat["id"], "hi", lambda r: run_record("queued", r))
            await store.update_run(run["id"], status="running")
            run = await store.get_run(run["id"])
            assert run is not None
            if first is not None:
                assert await run_ends.finish_if_active(log, run, first, error="worker w1 was lost")
            await runs._finish(dict(run), RunStatus.SUCCEEDED)
            after = await store.get_run(run["id"])
            assert after is not None
            recs = await store.events_after(chat["id"], 0, 100)
            return after, [(r.type, r.subtype) for r in recs if r.type == "run"]
        finally:
            await store.close()

    return asyncio.run(main())


def test_a_late_end_does_not_overwrite_an_interrupted_run(tmp_path: Path) -> None:
    after, recs = _ends(tmp_path, "interrupted")
    assert after["status"] == "interrupted"
    assert after["error"] == "worker w1 was lost"
    assert recs == [("run", "queued"), ("run", "interrupted")], "no second end"


def test_the_first_end_of_a_run_is_recorded(tmp_path: Path) -> None:
    after, recs = _ends(tmp_path, None)
    assert after["status"] == "succeeded"
    assert recs == [("run", "queued"), ("run", "succeeded")]


# ---- the records of a run ended elsewhere (review of 2026-11-24, wave 11) ------------------
# A worker declared lost comes back: its agent's buffered records must not follow the run's
# final record, nor change the run's fields (result, last_seq, turn).


def _late_batch(tmp_path: Path, *, fast: bool) -> tuple[str, dict[str, Any], list[tuple[str, str | None]]]:
    """A running run ended ``interrupted`` by the sweep's path; then a batch of its records
    appended with ``active_run`` (``fast``: the SQLite fast path; else the path of a batch
    with an ``after`` hook, PostgreSQL's path). What it raised, the run, its records."""

    async def main() -> tuple[str, dict[str, Any], list[tuple[str, str | None]]]:
        url = f"sqlite+aiosqlite:///{tmp_path}/db.sqlite3"
        store = Store(url)
        await store.start()
        try:
            log = EventLog(store, Hub(), 65536)
            chat = await store.create_chat(workspace=str(tmp_path), model=None, options={}, title="t")
            run = await log.create_run(chat["id"], "hi", lambda r: run_record("queued", r))
            await store.update_run(run["id"], status="running")
            new = [NewRecord("agent", "assistant", None, {"n": i}, None, run["id"]) for i in range(3)]
            await log.append(chat["id"], new, active_run=run["id"])  # active: written
            row = await store.get_run(run["id"])
            assert row is not None
            assert await run_ends.finish_if_active(log, row, "interrupted", error="worker w1 was lost")

            async def after(_conn: Any, _recs: Any) -> None:
                return None

            raised = "nothing"
            try:
                await log.append(chat["id"], new, active_run=run["id"], after=None if fast else after)
            except RunEndedError as e:
                raised = f"RunEndedError: {e}"
            later = await store.get_run(run["id"])
            assert later is not None
            recs = await store.events_after(chat["id"], 0, 100)
            return raised, later, [(r.type, r.subtype) for r in recs]
        finally:
            await store.close()

    return asyncio.run(main())


@pytest.mark.parametrize("fast", [True, False], ids=["fast-path", "transaction"])
def test_a_batch_of_a_run_that_is_over_is_not_written(tmp_path: Path, fast: bool) -> None:
    raised, run, recs = _late_batch(tmp_path, fast=fast)
    assert raised.startswith("RunEndedError"), raised
    assert recs == [("run", "queued")] + [("assistant", None)] * 3 + [("run", "interrupted")]
    assert run["status"] == "interrupted"
    assert run["last_seq"] == len(recs), "the run's last record is its end"


def test_a_run_ended_elsewhere_stores_nothing_more_and_its_agent_is_stopped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The run manager's side: a batch refused (the run is over) stops the agent at once;
    the run keeps the end the other process recorded, and nothing follows it."""

    async def main() -> tuple[dict[str, Any], list[tuple[str, str | None]], int]:
        url = f"sqlite+aiosqlite:///{tmp_path}/db.sqlite3"
        store = Store(url)
        await store.start()
        try:
            log = EventLog(store, Hub(), 65536)
            slow = {"CURSOR_AGENT_SIM_FAULT": "slow", "CURSOR_AGENT_SIM_DELAY": "0.2",
                    "CURSOR_CONFIG_DIR": str(tmp_path / "cursor-config")}
            settings = ServerSettings(
                token="t" * 16, database_url=url, simulate=True, batch_max_events=1, agent_env=slow
            )
            runs = RunManager(settings, log)
            chat = await store.create_chat(
                workspace=str(tmp_path), model=None, options={"trust": True}, title="t"
            )
            run = await runs.submit(chat, "count to 50")
            task = runs._active[run["id"]].task
            assert task is not None
            while not [r for r in await store.events_after(chat["id"], 0, 100) if r.source == "agent"]:
                await asyncio.sleep(0.05)
            row = await store.get_run(run["id"])
            assert row is not None
            assert await run_ends.finish_if_active(log, row, "interrupted", error="worker w1 was lost")
            await asyncio.wait_for(task, 60)
            after = await store.get_run(run["id"])
            assert after is not None
            recs = await store.events_after(chat["id"], 0, 1000)
            end = next(r.seq for r in recs if (r.type, r.subtype) == ("run", "interrupted"))
            return after, [(r.type, r.subtype) for r in recs if r.seq > end], end
        finally:
            await store.close()

    with caplog.at_level("WARNING", logger="cursor_agent_api"):
        run, later, end = asyncio.run(main())
    assert later == [], "nothing after the run's final record"
    assert run["status"] == "interrupted"
    assert run["error"] == "worker w1 was lost"
    assert run["result"] is None
    assert run["last_seq"] == end
    assert "stopping the agent" in caplog.text
