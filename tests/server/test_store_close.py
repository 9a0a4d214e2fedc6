"""Closing a store on PostgreSQL is bounded: a database host that stopped answering (packets
dropped, the connections left open) does not hold a stop (SIGTERM) of an API server or a
worker. SQLAlchemy's ``dispose()`` closed the pool's connections one after the other, each
waiting for the database's goodbye up to the statement timeout (60 s: 10 minutes for the
pool's 10) and each logged as an "Exception closing connection". Now they are closed
together within ``store_connect_timeout``; those unanswered then are dropped, in one line.
A database that answers sees its connections closed normally.

The database is behind a :class:`PgProxy` (:meth:`PgProxy.hold`: the host stops answering);
the statement timeout is short (2 s), the connect timeout 1 s."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import pytest
from pg_proxy import PgProxy, proxied
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from cursor_agent_api.server.store import Store
from cursor_agent_api.server.store.engine import _close

POOLED = 3
"""The connections the store's pool holds when it is closed."""
HANG_GUARD = 120.0
"""A hang's limit only (the old code needed POOLED x 2 s; the new one 1 s)."""
CLOSING_FAILED = "Exception closing connection"
"""What SQLAlchemy's pool logs for each connection whose graceful close failed."""
CLOSED_UNCLEANLY = "did not close cleanly"
"""What the close logs (once) when it dropped connections."""
DROPPED = (f"the database's connections did not close cleanly (no answer within 1 s, or the "
           f"connection broke): {POOLED} connection(s) dropped")


@contextlib.asynccontextmanager
async def _pooled_store(url: str) -> AsyncIterator[Store]:
    """A started store on ``url`` whose pool holds :data:`POOLED` open connections (each used
    at once: checked out together, then back in the pool)."""
    store = Store(url, connect_timeout=1.0, statement_timeout=2.0)
    await store.start()
    try:
        async with contextlib.AsyncExitStack() as stack:
            for _ in range(POOLED):
                conn = await stack.enter_async_context(store.connect())
                await conn.execute(text("SELECT 1"))
        yield store
    finally:
        await store.close()  # (again: nothing left to close)


async def _backends(db_url: str) -> int:
    """How many connections to ``db_url``'s database PostgreSQL has, besides the one asking."""
    engine = create_async_engine(db_url, poolclass=NullPool)
    try:
        async with engine.connect() as conn:
            return int((await conn.execute(text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()"))).scalar() or 0)
    finally:
        await engine.dispose()


def test_closing_a_store_whose_database_stopped_answering_drops_its_connections_at_once(
    db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The pool's connections get no answer to their goodbye: the close waits once, the
    connect timeout, for all of them together (not the statement timeout for each), drops
    them, and says so in one line; no "Exception closing connection" for each."""
    if make_url(db_url).get_backend_name() != "postgresql":
        pytest.skip("PostgreSQL's pool (SQLite has no network to wait on)")

    async def main(proxy: PgProxy, through: str) -> None:
        async with _pooled_store(through) as store:
            proxy.hold()
            await asyncio.wait_for(store.close(), HANG_GUARD)

    with proxied(db_url) as (proxy, through), caplog.at_level(logging.WARNING):
        asyncio.run(main(proxy, through))
    failed = [r for r in caplog.records if r.getMessage().startswith(CLOSING_FAILED)]
    assert not failed, [r.getMessage() for r in failed]  # the old code: one per connection
    said = [r.getMessage() for r in caplog.records if CLOSED_UNCLEANLY in r.getMessage()]
    assert said == [DROPPED], caplog.text
    assert not any(r.exc_info for r in caplog.records), caplog.text


def test_closing_a_store_whose_database_answers_closes_its_connections_normally(
    db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A database that answers: each connection is closed gracefully (none dropped, nothing
    logged), and PostgreSQL has none of them left. Gracefully: the proxy in between saw each
    say goodbye (PostgreSQL's Terminate as its last bytes) and wait for the database to end
    the connection. A connection dropped (``terminate()``) leaves PostgreSQL too, and sends
    the goodbye as well, but hangs up at once: :meth:`PgProxy.goodbyes` tells them apart."""
    if make_url(db_url).get_backend_name() != "postgresql":
        pytest.skip("PostgreSQL's pool")

    async def main(through: str) -> int:
        async with _pooled_store(through) as store:
            assert await _backends(db_url) >= POOLED
            await asyncio.wait_for(store.close(), HANG_GUARD)
        # a graceful close waits for the database to end the connection: no backend left
        # (its process may still be leaving pg_stat_activity: asked again until it has)
        for _ in range(200):
            if (left := await _backends(db_url)) == 0:
                break
            await asyncio.sleep(0.05)
        return left

    with proxied(db_url) as (proxy, through), caplog.at_level(logging.WARNING):
        assert asyncio.run(main(through)) == 0
        goodbyes = proxy.goodbyes()
    assert len(goodbyes) >= POOLED and all(goodbyes), goodbyes
    assert CLOSED_UNCLEANLY not in caplog.text, caplog.text
    assert CLOSING_FAILED not in caplog.text, caplog.text


def test_a_connection_whose_drop_fails_too_is_counted_dropped() -> None:
    """A connection whose graceful close failed and whose drop (``terminate()``) raises as
    well: counted dropped, and the failure goes no further (so that the store's close goes
    on to the engine's ``dispose()``)."""

    class Broken:
        async def close(self, *, timeout: float) -> None:
            raise ConnectionResetError("the connection broke")

        def terminate(self) -> None:
            raise RuntimeError("cannot even drop it")

    assert asyncio.run(_close(Broken(), 1.0)) is False
