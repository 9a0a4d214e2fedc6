"""A run's end is recorded once, by whoever ends it first (review of 2026-11-24, wave 10): a
late end never overwrites a final status. In distributed mode an API server's sweep may
mark a worker's run ``interrupted`` (its worker looked lost) while the worker still runs
it; the worker's end, when it comes, must leave ``interrupted`` and add no second end
record (it turned into ``succeeded``). On SQLite; the same SQL serves PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from cursor_agent_api.server.dispatch import run_ends
from cursor_agent_api.server.hub import Hub
from cursor_agent_api.server.log import EventLog
from cursor_agent_api.server.models import RunStatus
from cursor_agent_api.server.runs import RunManager, run_record
from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.store import Store


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
