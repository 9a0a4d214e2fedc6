"""Runs written before the folded turn state (migration 0004: ``runs.turn`` NULL, no
``turn_texts``, tool calls not folded): their state is folded from their records, whole,
once, by whichever reader or restart comes first. SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from server_helpers import Server, new_chat, poll, wait_run, write_script
from sqlalchemy import update

from cursor_agent_api.server.models import runs, tool_calls, turn_texts
from cursor_agent_api.server.store import Store

RECORDING = sorted((Path(__file__).parents[1] / "data" / "cursor-real").glob("*.ndjson"))[1]
"""A real recording with thinking, text and tool calls."""


def forget_turns(db_url: str) -> None:
    """Make every run look written by a server from before the state."""

    async def main() -> None:
        store = Store(db_url)
        await store.start()
        try:
            async with store.transaction() as conn:
                await conn.execute(turn_texts.delete())
                await conn.execute(tool_calls.delete())
                await conn.execute(update(runs).values(turn=None))
        finally:
            await store.close()

    asyncio.run(main())


def three_old_runs(make_server: Any) -> tuple[Server, dict[str, Any], list[str], Any]:
    """A server, a chat with three runs of :data:`RECORDING` (their ids, and the chat's
    turns as read then), the runs then made to look written before the state."""
    server: Server = make_server(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(RECORDING)})
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True)
        run_ids = []
        for _ in range(3):
            run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "go"}).json()
            wait_run(c, run["id"])
            run_ids.append(run["id"])
        before = c.get(f"/api/chats/{chat['id']}/turns").json()
    forget_turns(server.db_url)
    return server, chat, run_ids, before


def items_of(c: Any, chat_id: str, run_id: str) -> list[dict[str, Any]]:
    turns = c.get(f"/api/chats/{chat_id}/turns").json()
    return next(r["items"] for r in turns["runs"] if r["run"]["id"] == run_id)


def test_a_run_cut_off_by_an_old_server_keeps_its_thinking_and_text(make_server: Any, tmp_path: Path) -> None:
    """A server from before the turn state is killed mid-run; today's server ends the run
    at start (interrupted) and stores its whole fold, not only what closing it changed (the
    turn showed no thinking and no text, though the records had them)."""
    script = write_script(tmp_path / "script.ndjson", 10_000, thinking=3)
    env = {
        "CURSOR_AGENT_SIM_SCRIPT": str(script),
        "CURSOR_AGENT_SIM_FAULT": "slow",
        "CURSOR_AGENT_SIM_DELAY": "0.02",
    }
    server: Server = make_server(sim_env=env)
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True)
        run_id = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "count"}).json()["id"]
        poll(lambda: (c.get(f"/api/runs/{run_id}").json()["last_seq"] or 0) >= 10)
    server.kill()  # SIGKILL: the run stays "running", its owner dead
    forget_turns(server.db_url)  # as a server from before 0004 left it

    again = make_server(sim_env=env)
    with again.client() as c:
        assert c.get(f"/api/runs/{run_id}").json()["status"] == "interrupted"
        recovered = items_of(c, chat["id"], run_id)
    forget_turns(again.db_url)  # the same run folded from its records by a reader
    with again.client() as c:
        refolded = items_of(c, chat["id"], run_id)
    assert [i["type"] for i in recovered] == ["thinking", "text"]
    assert recovered[1]["text"].startswith("0 1 2 ")
    assert recovered == refolded


def test_old_chats_opened_at_once_are_folded_once_each(make_server: Any) -> None:
    """Concurrent first reads of old runs (several requests, or processes): each run is
    folded and stored once, with no deadlock (PostgreSQL answered 503 "deadlock detected"),
    and a fold that comes second changes nothing."""
    from cursor_agent_api.server.store import replace_turn
    from cursor_agent_api.server.turns import FoldedBatch, backfill_page

    server, chat, run_ids, before = three_old_runs(make_server)

    async def main() -> tuple[list[int], Any]:
        store = Store(server.db_url)
        await store.start()
        try:
            page = (await store.read_chat_turns(chat["id"])).runs  # every run, none folded
            counts = await asyncio.gather(*(backfill_page(store, chat["id"], page, 65536) for _ in range(4)))
            # a fold of a run that has its state by then (an empty one: it would erase it)
            late = await replace_turn(store, FoldedBatch(chat["id"], run_ids[0], [], [], 0, {}), [], 65536)
            return list(counts), late
        finally:
            await store.close()

    counts, late = asyncio.run(main())
    assert sum(counts) == len(run_ids), counts
    assert late is False
    with server.client() as c:
        assert c.get(f"/api/chats/{chat['id']}/turns").json() == before


def unfolded(db_url: str, chat_id: str) -> set[str]:
    """The chat's runs whose ``turn`` is not stored (SQL NULL or JSON null)."""

    async def main() -> set[str]:
        store = Store(db_url)
        await store.start()
        try:
            async with store.connect() as conn:
                rows = await conn.execute(runs.select().where(runs.c.chat_id == chat_id))
                return {str(r.id) for r in rows if r.turn is None}
        finally:
            await store.close()

    return asyncio.run(main())


def test_a_page_of_turns_folds_only_its_own_old_runs(make_server: Any) -> None:
    """A page of ``…/turns`` folds the old runs it shows, not every old run of the chat: each
    page read a column of every run of the chat (the JSON of their state) to find the ones to
    fold, a cost that grew with the chat, not with the page."""
    server, chat, run_ids, before = three_old_runs(make_server)
    assert unfolded(server.db_url, chat["id"]) == set(run_ids)
    with server.client() as c:
        newest = c.get(f"/api/chats/{chat['id']}/turns", params={"limit": 1}).json()
    assert [r["run"]["id"] for r in newest["runs"]] == run_ids[-1:]
    assert newest["runs"] == before["runs"][-1:]  # folded for the page, as before
    assert unfolded(server.db_url, chat["id"]) == set(run_ids[:-1])  # the others not read
    with server.client() as c:
        assert c.get(f"/api/chats/{chat['id']}/turns").json() == before
    assert unfolded(server.db_url, chat["id"]) == set()
