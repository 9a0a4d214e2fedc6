"""A transaction left idle (its process frozen: SIGSTOP, a paused VM, a debugger) holds its
locks until its session ends. The runs a frozen worker was writing stay locked, and the sweep
that would declare them interrupted waits on them, for as long as the worker stays frozen (a
stopped process's kernel still answers TCP keepalive). Every pooled connection to PostgreSQL,
the store's and the job queue's, has ``idle_in_transaction_session_timeout`` set to twice a
query's waits (``store_connect_timeout + store_statement_timeout``; twice, so that a client cut
off mid-transaction gives up first, with its own error: tests/distributed/test_held_database.py
saw the database's instead, once, when it was the statement timeout): PostgreSQL ends such a
session, and its locks go with it."""

from __future__ import annotations

import asyncio
import contextlib

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from cursor_agent_api.database_urls import libpq_url
from cursor_agent_api.server.dispatch.jobs import make_app
from cursor_agent_api.server.store import Store

KEY = 7_204_113
"""An advisory lock's key, taken by the transaction left idle."""


def _postgresql(db_url: str) -> None:
    if make_url(db_url).get_backend_name() != "postgresql":
        pytest.skip("PostgreSQL's sessions (SQLite has no idle transactions to end)")


async def _free_within(db_url: str, seconds: float) -> bool:
    """Whether another session can take the lock ``KEY`` within ``seconds``."""
    other = await asyncpg.connect(libpq_url(db_url))
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while loop.time() < deadline:
            if await other.fetchval("SELECT pg_try_advisory_lock($1)", KEY):
                await other.execute("SELECT pg_advisory_unlock($1)", KEY)
                return True
            await asyncio.sleep(0.1)
        return False
    finally:
        await other.close()


def test_a_store_transaction_left_idle_is_ended_and_its_locks_freed(db_url: str) -> None:
    _postgresql(db_url)

    async def main() -> tuple[str, bool, bool]:
        store = Store(db_url, connect_timeout=1.0, statement_timeout=1.0)  # 2 × 2 s idle
        await store.start()
        try:
            async with store.connect() as conn:
                shown = (await conn.execute(text("SHOW idle_in_transaction_session_timeout"))).scalar()
                await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": KEY})
                freed = await _free_within(db_url, 30.0)  # the old code: held for ever
                with contextlib.suppress(Exception):  # its session was ended: expected
                    await conn.rollback()
            async with store.connect() as conn:  # the pool still serves (the ended one dropped)
                works = (await conn.execute(text("SELECT 1"))).scalar() == 1
        finally:
            await store.close()
        return str(shown), freed, works

    shown, freed, works = asyncio.run(main())
    assert freed, "the idle transaction kept its lock"
    assert shown == "4s"
    assert works


def test_a_job_queue_transaction_left_idle_is_ended_and_its_locks_freed(db_url: str) -> None:
    _postgresql(db_url)

    async def main() -> tuple[object, bool]:
        store = Store(db_url, connect_timeout=5.0, statement_timeout=30.0)
        await store.start()  # (the queue's schema)
        await store.close()
        app = make_app(db_url, connect_timeout=1.0, statement_timeout=1.0)
        async with app.open_async():
            shown = await app.connector.execute_query_one_async(
                "SHOW idle_in_transaction_session_timeout")
            pool = app.connector.pool
            async with pool.connection() as conn:
                try:
                    async with conn.transaction():
                        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (KEY,))
                        freed = await _free_within(db_url, 30.0)
                except Exception:
                    pass
        return shown, freed

    shown, freed = asyncio.run(main())
    assert freed, "the idle transaction kept its lock"
    assert shown == {"idle_in_transaction_session_timeout": "4s"}, shown
