"""A chat with more runs than a statement takes bound values (review of 2026-11-24):
``GET /api/chats/{id}/turns`` named every run in one ``IN (…)`` list, which asyncpg
refuses past 32,767 values (and SQLite past 32,766); the refusal read as "the database is
unavailable". The runs are now named in batches, and that refusal is not transient.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from inproc import InProcServer
from server_helpers import new_chat, wait_run
from sqlalchemy import text
from sqlalchemy.exc import InterfaceError

from cursor_agent_api.server.store import Store, is_transient

MANY = 32_768


async def _add_runs(db_url: str, chat_id: str, n: int) -> None:
    """``n`` finished runs of the chat, inserted in one statement (a generated series)."""
    store = Store(db_url)
    await store.start()
    try:
        series = (
            f"generate_series(1, {n}) AS g(i)"
            if not store.is_sqlite
            else f"(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {n}) "
            "SELECT i FROM s) AS g"
        )
        async with store.transaction() as conn:
            await conn.execute(
                text(
                    "INSERT INTO runs (id, chat_id, prompt, status, created_ms, turn, num) "
                    "SELECT 'many-' || i, :chat, 'p', 'succeeded', i, '{}', 1000000 + i FROM " + series
                ),
                {"chat": chat_id},
            )
    finally:
        await store.close()


# 33 pages of 1,000 runs: ~20 s of the server's work on a quiet machine, 94-119 s at a load of
# 12-14 (2026-11-25): the suite's 120 s would fail it for being slow, not stuck
@pytest.mark.timeout(600)
def test_the_turns_of_a_chat_with_more_runs_than_a_statement_takes(
    make_inproc: Callable[..., InProcServer], db_url: str
) -> None:
    server = make_inproc()
    with server.client() as c:
        chat = new_chat(c)
        r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"})
        assert wait_run(c, r.json()["id"])["status"] == "succeeded"
        asyncio.run(_add_runs(db_url, chat["id"], MANY))
        seen, params = 0, {"limit": "1000"}
        while True:  # a page at a time (docs/server.md, Pages of runs)
            r = c.get(f"/api/chats/{chat['id']}/turns", params=params)
            assert r.status_code == 200, r.text[:300]
            seen += len(r.json()["runs"])
            if not r.json()["has_more"]:
                break
            params["before_run"] = r.json()["next_before_run"]
        assert seen == MANY + 1


def test_too_many_bound_values_is_not_an_outage() -> None:
    asyncpg = pytest.importorskip("asyncpg")
    refused = Exception("adapted")
    refused.__cause__ = asyncpg.exceptions.InterfaceError("the number of query arguments cannot exceed 32767")
    assert not is_transient(InterfaceError("SELECT …", {}, refused))
    closed = Exception("adapted")
    closed.__cause__ = asyncpg.exceptions.InterfaceError("connection is closed")
    assert is_transient(InterfaceError("SELECT …", {}, closed))
