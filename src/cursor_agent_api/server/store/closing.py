"""Closing PostgreSQL's pooled connections within a bound (:class:`PooledConnections`).

SQLAlchemy's ``engine.dispose()`` closes the pool's connections one after the other, each
gracefully: asyncpg sends its goodbye (``Terminate``) and waits for the database to end the
connection, up to the ``command_timeout`` (``store_statement_timeout``, 60 s). A database host
that stopped answering (packets dropped: the connections stay open) made a stop (SIGTERM) of a
worker or an API server wait that long per connection, up to 10 minutes for the pool's 10, each
logged as an "Exception closing connection". Here the connections still in the pool are closed
together, gracefully, within one bound (``store_connect_timeout``: a goodbye is one round trip,
as a connection's opening is); those still unanswered then are dropped without it (asyncpg's
``Connection.terminate()``) and said in one line. A database that answers sees each of its
connections end normally. Then ``dispose()`` finds them closed: nothing left to wait for.

The connections are known through the pool's public ``connect`` event (its
:class:`~sqlalchemy.pool.ConnectionPoolEntry`, whose ``driver_connection`` is asyncpg's); a
connection checked out at that moment (a request still in flight) is left to the pool, as
``dispose()`` leaves it.

Example:
    >>> import asyncio
    >>> from sqlalchemy.ext.asyncio import create_async_engine
    >>> async def demo() -> int:
    ...     engine = create_async_engine("postgresql+asyncpg://u@127.0.0.1/db")  # never connected
    ...     pooled = PooledConnections(engine)
    ...     dropped = await pooled.close(within=1.0)
    ...     await engine.dispose()
    ...     return dropped
    >>> asyncio.run(demo())
    0
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

logger = logging.getLogger("cursor_agent_api.server")


class PooledConnections:
    """The connections ``engine``'s pool opened (followed from now on), and their bounded
    close (see the module's text)."""

    def __init__(self, engine: AsyncEngine) -> None:
        # a pool entry lives as long as the pool keeps it (its connection opened again in it
        # after a failure: the event again)
        self._entries: weakref.WeakSet[Any] = weakref.WeakSet()
        event.listen(engine.sync_engine.pool, "connect", self._connected)

    def _connected(self, _dbapi_connection: Any, entry: Any) -> None:
        self._entries.add(entry)

    def idle(self) -> list[Any]:
        """The driver's connections open in the pool, not checked out."""
        conns = []
        for entry in list(self._entries):
            if entry.dbapi_connection is None or entry.in_use:
                continue
            conn = entry.driver_connection
            if conn is not None and not conn.is_closed():
                conns.append(conn)
        return conns

    async def close(self, *, within: float) -> int:
        """Close the pool's idle connections together, gracefully, within ``within`` seconds;
        drop those the database did not answer by then (logged in one line). How many were
        dropped."""
        results = await asyncio.gather(*(_close(conn, within) for conn in self.idle()))
        dropped = results.count(False)
        if dropped:
            logger.warning("the database did not answer while closing: %d connection(s) dropped "
                           "(after %g s)", dropped, within)
        return dropped


async def _close(conn: Any, within: float) -> bool:
    """Close asyncpg's ``conn`` gracefully within ``within`` seconds, else drop it: whether it
    closed gracefully."""
    try:
        await conn.close(timeout=within)
    except Exception:  # no answer in time (TimeoutError), or the connection broke meanwhile
        conn.terminate()  # (asyncpg aborted it already: this makes sure)
        return False
    return True
