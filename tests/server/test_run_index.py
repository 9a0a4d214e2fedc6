"""A page of a chat's runs, or of its tool calls, is read from an index in its order (review
"scale", 2026-11-24):
``runs`` had no index on ``(chat_id, created_ms)``, so every page of ``GET …/runs`` and
``GET …/turns`` found the chat's runs by ``ix_runs_chat_id`` and sorted all of them (a
32,769-run chat: 32,769 rows sorted per page). Migration 0007 adds ``ix_runs_chat_order``
``(chat_id, created_ms, id)``; the database's own plan must read the page from it, with no
sort. The same for a page of ``GET …/tool-calls`` (paged since: ``ix_tool_calls_chat_order``,
migration 0008), and a page of ``GET /api/chats`` (paged by a key since: ``ix_chats_recent``,
migration 0010). SQLite (``EXPLAIN QUERY PLAN``) and PostgreSQL (``EXPLAIN``). A plan, not a
timing.
"""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import Select, text
from test_many_runs import _add_runs

from cursor_agent_api.server.store import Store
from cursor_agent_api.server.store.chats import chats_page_query
from cursor_agent_api.server.store.run_order import newest_ids_query
from cursor_agent_api.server.store.turn_state import call_places_query

RUNS = 5_000
"""Runs of the chat: enough that PostgreSQL's planner weighs reading them all (its
statistics are taken: ``ANALYZE``)."""
CALLS = 5_000
"""Tool calls of the chat, for the same reason."""


async def _plans(db_url: str) -> dict[str, list[str]]:
    """The database's plan of each query of a page of runs: the newest page, a page before a
    run in the middle of the chat."""
    store = Store(db_url)
    await store.start()
    try:
        chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
        other = await store.create_chat(workspace="/w", model=None, options={}, title="t")
    finally:
        await store.close()
    await _add_runs(db_url, chat["id"], RUNS)
    store = Store(db_url)
    await store.start()
    try:
        async with store.transaction() as conn:  # another chat's runs, in between
            await conn.execute(text(
                "INSERT INTO runs (id, chat_id, prompt, status, created_ms, num) "
                "VALUES ('other-1', :c, 'p', 'succeeded', 2500, 5), ('other-2', :c, 'p', 'failed', 2501, 6)"
            ), {"c": other["id"]})
        queries = {
            "newest page": newest_ids_query(chat["id"], None, 101),
            "page before a run": newest_ids_query(chat["id"], (2500, "many-2500"), 101),
        }
        async with store.connect() as conn:
            if not store.is_sqlite:
                await conn.execute(text("ANALYZE runs"))
            plans = {name: await _plan(store, conn, query) for name, query in queries.items()}
            # the page's answer is the one expected (the plan reads the right rows)
            ids = [r[0] for r in await conn.execute(queries["page before a run"])]
        assert ids == [f"many-{i}" for i in range(2499, 2398, -1)]
        return plans
    finally:
        await store.close()


async def _plan(store: Store, conn: Any, query: Select[Any]) -> list[str]:
    """The database's plan of ``query``, a line per step."""
    sql = str(query.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
    explain = "EXPLAIN QUERY PLAN " if store.is_sqlite else "EXPLAIN "
    rows: list[Any] = list(await conn.execute(text(explain + sql)))
    # SQLite: (id, parent, notused, detail); PostgreSQL: one line of text per row
    return [str(r[-1]) for r in rows]


def _assert_read_in_order(plans: dict[str, list[str]], index: str) -> None:
    for name, plan in plans.items():
        lines = "\n".join(plan)
        assert index in lines, f"{name}: not read from the index:\n{lines}"
        # SQLite: "USE TEMP B-TREE FOR ORDER BY"; PostgreSQL: a Sort node
        sorts = [p for p in plan if "TEMP B-TREE" in p or p.strip().lstrip("-> ").startswith("Sort")]
        assert not sorts, f"{name}: sorted:\n{lines}"


async def _call_plans(db_url: str) -> dict[str, list[str]]:
    """The plan of a page of a chat's tool calls (CALLS of them, in two runs' turns)."""
    store = Store(db_url)
    await store.start()
    try:
        chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
        async with store.transaction() as conn:
            await conn.execute(text(
                "INSERT INTO runs (id, chat_id, prompt, status, created_ms, num) "
                "VALUES ('r1', :c, 'p', 'succeeded', 1, 1), ('r2', :c, 'p', 'succeeded', 2, 2)"
            ), {"c": chat["id"]})
            await conn.execute(text(
                "INSERT INTO tool_calls (chat_id, run_id, call_id, kind, name, status, args, output, "
                "idx, started_seq, completed_seq) "
                "SELECT :c, CASE WHEN i % 2 = 0 THEN 'r1' ELSE 'r2' END, 'c' || i, 'read', 'read', "
                "'succeeded', '{}', '', i, 3 * i, 3 * i + 1 FROM " + _series(store, CALLS)
            ), {"c": chat["id"]})
        async with store.connect() as conn:
            if not store.is_sqlite:
                await conn.execute(text("ANALYZE tool_calls"))
            return {
                "first page": await _plan(store, conn, call_places_query(chat["id"], None, 0).limit(501)),
                "a later page": await _plan(store, conn, call_places_query(chat["id"], None, 900).limit(501)),
            }
    finally:
        await store.close()



def _series(store: Store, n: int) -> str:
    if not store.is_sqlite:
        return f"generate_series(1, {n}) AS g(i)"
    return (f"(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {n}) "
            "SELECT i FROM s) AS g")


def test_a_page_of_runs_is_read_from_the_index_in_order(db_url: str) -> None:
    _assert_read_in_order(asyncio.run(_plans(db_url)), "ix_runs_chat_order")


def test_a_page_of_tool_calls_is_read_from_the_index_in_order(db_url: str) -> None:
    _assert_read_in_order(asyncio.run(_call_plans(db_url)), "ix_tool_calls_chat_order")


async def _chat_plans(db_url: str) -> dict[str, list[str]]:
    """The plan of a page of chats (CALLS of them), the first and one from a key."""
    store = Store(db_url)
    await store.start()
    try:
        async with store.transaction() as conn:
            await conn.execute(text(
                "INSERT INTO chats (id, workspace, options, title, created_ms, updated_ms, last_seq, num) "
                "SELECT 'chat-' || i, '/w', '{}', 't', i, i, 0, i FROM " + _series(store, CALLS)
            ))
        async with store.connect() as conn:
            if not store.is_sqlite:
                await conn.execute(text("ANALYZE chats"))
            later = chats_page_query((2500, "chat-2500")).limit(101)
            ids = [r.id for r in await conn.execute(later)]
            assert ids == [f"chat-{i}" for i in range(2499, 2398, -1)]
            return {
                "first page": await _plan(store, conn, chats_page_query(None).limit(101)),
                "a page from a key": await _plan(store, conn, later),
            }
    finally:
        await store.close()


def test_a_page_of_chats_is_read_from_the_index_in_order(db_url: str) -> None:
    _assert_read_in_order(asyncio.run(_chat_plans(db_url)), "ix_chats_recent")
