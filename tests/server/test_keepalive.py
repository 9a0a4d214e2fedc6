"""Every connection to PostgreSQL has TCP keepalive (and no ``TCP_USER_TIMEOUT``: it would
cut a connection whose server only stops reading for a while), timed from
``store_connect_timeout`` (``server/store/engine.py``: ``KeepAlive``): the store's pool and its
LISTEN connections (the relay's, the answers', the sessions'), the migrations' own
connection (no statement timeout: a host that stops answering during the migrations was
never noticed), the job queue's pool and Procrastinate's LISTEN connection (no bound of its
own either); the store's LISTEN connection waits ``store_connect_timeout`` to open.

These tests read the options back from the sockets (what can be observed here: a host that
drops packets cannot be made without a firewall; ``tests/distributed/test_vanished_database.py``
shows the probes at work against a host gone without a word)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import AsyncIterator

import pytest
from pg_proxy import proxied
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine
from sqlalchemy.pool import NullPool

from cursor_agent_api.server.dispatch.jobs import make_app
from cursor_agent_api.server.store import Store
from cursor_agent_api.server.store.engine import MIGRATION_LOCK

CONNECT_TIMEOUT = 7.0
KEPT_ALIVE = (1, 4, 1, 3, 0)
"""What every socket must have for a 7 s ``store_connect_timeout`` (``KeepAlive.within(7)``):
SO_KEEPALIVE on, probes after 4 s of silence, 1 s apart, 3 of them (dead after 4 + 3 = 7 s),
no TCP_USER_TIMEOUT (0: a server whose receive buffer is full for longer, its zero-window
probes unacknowledged, must not have the connection cut)."""
WITHIN = 60.0
"""A hang's limit only."""


def _options(port: int) -> list[tuple[int, ...]]:
    """Per TCP socket of this process connected to 127.0.0.1:``port``: SO_KEEPALIVE,
    TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT, TCP_USER_TIMEOUT."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            sock = socket.socket(fileno=os.dup(int(fd)))  # (its own family and type)
        except OSError:  # not a socket (or closed meanwhile)
            continue
        with sock:
            try:
                if (sock.family, sock.type) != (socket.AF_INET, socket.SOCK_STREAM) or (
                        sock.getpeername()[1] != port):
                    continue
            except OSError:  # not connected
                continue
            found.append((sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
                          *(sock.getsockopt(socket.IPPROTO_TCP, o) for o in (
                              socket.TCP_KEEPIDLE, socket.TCP_KEEPINTVL, socket.TCP_KEEPCNT,
                              socket.TCP_USER_TIMEOUT))))
    return found


def _postgresql(db_url: str) -> None:
    if make_url(db_url).get_backend_name() != "postgresql":
        pytest.skip("PostgreSQL's connections (SQLite has no network)")


@contextlib.asynccontextmanager
async def _migrations_lock(db_url: str) -> AsyncIterator[AsyncConnection]:
    """The migrations' lock held (as another process's migrations would) until the end, on
    the connection given."""
    engine = create_async_engine(db_url, poolclass=NullPool)
    try:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": MIGRATION_LOCK})
            yield conn
            await conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": MIGRATION_LOCK})
    finally:
        await engine.dispose()


async def _until(condition: object, what: str) -> None:
    """Wait (polled: a condition of the kernel's or the database's) until ``condition()``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WITHIN
    while not await condition():  # type: ignore[operator]
        assert loop.time() < deadline, what
        await asyncio.sleep(0.05)


def test_the_stores_connections_its_listen_and_its_migrations_have_keepalive(db_url: str) -> None:
    _postgresql(db_url)

    async def main(port: int, through: str) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
        store = Store(through, connect_timeout=CONNECT_TIMEOUT, statement_timeout=30.0)
        async with _migrations_lock(db_url) as locker:
            starting = asyncio.ensure_future(store.start())

            async def waiting() -> bool:  # the migrations' connection waits for the lock
                assert not starting.done() or starting.result() is None
                found = (await locker.execute(text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock'"))).scalar()
                await locker.commit()  # (a transaction sees one snapshot of the activity)
                return bool(found)

            await _until(waiting, "the migrations did not wait for the lock")
            migrating = _options(port)
        await asyncio.wait_for(starting, WITHIN)
        try:
            async with contextlib.AsyncExitStack() as stack:
                for _ in range(3):
                    conn = await stack.enter_async_context(store.connect())
                    await conn.execute(text("SELECT 1"))
                listening = await store.listen("cursor_test", lambda _p: None, lambda: None)
                try:
                    pooled = _options(port)  # (the 3 and the LISTEN connection)
                finally:
                    await listening.close()
        finally:
            await store.close()
        return migrating, pooled

    with proxied(db_url) as (proxy, through):
        migrating, pooled = asyncio.run(main(proxy.port, through))
    assert migrating == [KEPT_ALIVE], migrating  # the old code: (0, ...) no keepalive
    assert len(pooled) == 4 and set(pooled) == {KEPT_ALIVE}, pooled


def test_the_job_queues_connections_and_its_listen_connection_have_keepalive(db_url: str) -> None:
    _postgresql(db_url)

    async def main(port: int, through: str) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
        store = Store(through, connect_timeout=CONNECT_TIMEOUT, statement_timeout=30.0)
        await store.start()  # (the queue's schema)
        await store.close()
        app = make_app(through, connect_timeout=CONNECT_TIMEOUT, statement_timeout=30.0)
        async with app.open_async():
            await app.connector.execute_query_one_async("SELECT 1 AS one")
            pooled = _options(port)

            async def notified(channel: str, payload: str) -> None:
                pass

            listener = asyncio.ensure_future(
                app.connector.listen_notify(on_notification=notified, channels=["cursor_test"]))
            try:
                async def listens() -> bool:
                    return len(_options(port)) > len(pooled)

                await _until(listens, "the LISTEN connection did not open")
                both = _options(port)
            finally:
                listener.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await listener
        return pooled, both

    with proxied(db_url) as (proxy, through):
        pooled, both = asyncio.run(main(proxy.port, through))
    assert pooled and set(pooled) == {KEPT_ALIVE}, pooled  # main: (1, 7200, 75, 9, 0), libpq's default
    assert len(both) > len(pooled) and set(both) == {KEPT_ALIVE}, both


def test_the_stores_listen_connection_waits_the_connect_timeout_for_a_silent_host(
        db_url: str) -> None:
    # store.listen() opened its connection with asyncpg's own wait (60 s), not
    # store_connect_timeout: a host that takes the connection and never answers held it so long
    _postgresql(db_url)

    async def main(through: str) -> BaseException | None:
        store = Store(through, connect_timeout=1.0, statement_timeout=30.0)
        opening = asyncio.ensure_future(store.listen("cursor_test", lambda _p: None, lambda: None))
        done, _ = await asyncio.wait({opening}, timeout=WITHIN / 2)  # (a hang's limit: < 60 s)
        if not done:  # the old code: still waiting
            opening.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await opening
            return None
        return opening.exception()

    with proxied(db_url) as (proxy, through):
        proxy.hold()  # connections taken, never answered
        error = asyncio.run(main(through))
    assert isinstance(error, TimeoutError), error
