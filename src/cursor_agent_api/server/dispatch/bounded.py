"""The job queue's connections to PostgreSQL, with the store's bounded waits.

Procrastinate's queries go through a psycopg pool of their own, beside the store's engine. A
PostgreSQL host that stops answering (a network partition, a hung host: connections stay
open, nothing comes back) would hold each of them for as long as TCP keeps trying, ~15 min:
a deferred run, a cancel, the API servers' sweep, a worker's fetch and heartbeat.
:class:`BoundedConnector` waits as the store does (``store_connect_timeout``,
``store_statement_timeout``):

* a new connection waits ``connect_timeout`` (libpq's ``connect_timeout``: whole seconds, 2 at
  least); the pool's opening (at start), twice as long for its first connection (psycopg
  waited 30 s), then raises :class:`~..store.StoreUnavailableError`;
* a statement the database runs for longer than ``statement_timeout`` is stopped by the
  database (its ``statement_timeout``);
* a connection whose host stops answering while it waits for an answer (nothing comes
  back, not even TCP's acknowledgements) is declared dead by the kernel within about
  ``connect_timeout`` (libpq's TCP keepalive, :class:`~..store.engine.KeepAlive`), however
  long the statement on it may run: the query fails then; so does Procrastinate's LISTEN
  connection (its worker's wait for new jobs), which has no statement bound of its own. A
  host that dies before it acknowledged the query sent is left to the bound below;
* a query that gets no answer at all is given up after ``connect_timeout +
  statement_timeout`` in any case (taking a connection from the pool, checking it, running
  the statement), plus the few seconds psycopg then spends trying to cancel it before it
  closes the connection.

A query given up, or that failed because the database is unavailable (a transient error:
:func:`~..store.is_transient`), raises :class:`~..store.StoreUnavailableError`, the
store's own error: the API answers its JSON 503 ("the database is unavailable"), a worker's
log says it in one line. Any other failure (a unique violation Procrastinate handles
itself) is raised as Procrastinate raised it.

Example:
    >>> c = BoundedConnector("host=127.0.0.1 dbname=db", connect_timeout=10, statement_timeout=60)
    >>> c.bound, c._pool_args["kwargs"]["options"], c._pool_args["kwargs"]["keepalives_idle"]
    (70.0, '-c statement_timeout=60000', 4)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Awaitable
from typing import Any, TypeVar

import anyio
import procrastinate
import psycopg_pool

from ..store import StoreUnavailableError, describe_error, is_transient
from ..store.engine import KeepAlive
from ..store.errors import unwrap_error

T = TypeVar("T")


class BoundedConnector(procrastinate.PsycopgConnector):
    """Procrastinate's psycopg connector whose queries wait as the store's do (see the
    module's text)."""

    def __init__(self, conninfo: str, *, connect_timeout: float, statement_timeout: float,
                 min_size: int = 1, max_size: int = 4) -> None:
        self.bound = float(connect_timeout + statement_timeout)
        connect = max(1, math.ceil(connect_timeout))
        # the pool's opening waits for its first connection: two attempts' worth, not 30 s
        self.opens_within = float(2 * max(2, connect))  # (libpq waits 2 s at least)
        super().__init__(
            pool_factory=functools.partial(_BoundedOpenPool, opens_within=self.opens_within),
            conninfo=conninfo,
            min_size=min_size,
            max_size=max_size,
            timeout=self.bound,  # the pool's own wait for a connection
            kwargs={
                "connect_timeout": connect,
                "options": f"-c statement_timeout={max(1, round(statement_timeout * 1000))}",
                **KeepAlive.within(connect_timeout).libpq(),
            },
        )

    async def _bounded(self, query: Awaitable[T]) -> T:
        """``query``'s result, given up after :attr:`bound` seconds; the database's
        unavailability as :class:`~..store.StoreUnavailableError`."""
        try:
            # anyio's scope, not asyncio.wait_for: before Python 3.12 wait_for can lose a cancel
            # of the caller (a worker's stop cancels its heartbeat loop) that comes as the query ends
            with anyio.fail_after(self.bound):
                return await query
        except TimeoutError as e:
            raise StoreUnavailableError(
                f"the database did not answer the job queue within {self.bound:g} s"
            ) from e
        except Exception as e:
            if not unavailable(e):
                raise
            raise StoreUnavailableError(describe_error(e)) from e

    async def open_async(self, pool: Any = None) -> None:
        """Open the pool (see :class:`Procrastinate's <procrastinate.PsycopgConnector>`): a
        database that gives it no connection within :attr:`opens_within` seconds raises
        :class:`~..store.StoreUnavailableError` (the pool is closed)."""
        try:
            await super().open_async(pool)
        except Exception as e:
            if isinstance(unwrap_error(e), psycopg_pool.PoolTimeout):
                raise StoreUnavailableError(f"the database gave the job queue no connection "
                                            f"within {self.opens_within:g} s") from e
            if not unavailable(e):
                raise
            raise StoreUnavailableError(describe_error(e)) from e

    async def execute_query_async(self, query: Any, **arguments: Any) -> None:
        await self._bounded(super().execute_query_async(query, **arguments))

    async def execute_query_one_async(self, query: Any, **arguments: Any) -> dict[str, Any]:
        return await self._bounded(super().execute_query_one_async(query, **arguments))

    async def execute_query_all_async(self, query: Any, **arguments: Any) -> list[dict[str, Any]]:
        return await self._bounded(super().execute_query_all_async(query, **arguments))


class _BoundedOpenPool(psycopg_pool.AsyncConnectionPool):
    """psycopg's pool, whose :meth:`open` waits ``opens_within`` seconds for its first
    connections (psycopg's default: 30)."""

    def __init__(self, *args: Any, opens_within: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.opens_within = opens_within

    async def open(self, wait: bool = False, timeout: float | None = None) -> None:
        await super().open(wait=wait, timeout=self.opens_within if timeout is None else timeout)


def unavailable(error: BaseException) -> bool:
    """Whether the job queue's ``error`` says the database is unavailable (psycopg's
    ``OperationalError``: a connection lost, refused or timed out, a statement cancelled; or
    any transient error), not that a query was refused.

    Example:
        >>> import psycopg
        >>> from procrastinate.exceptions import ConnectorException, UniqueViolation
        >>> def raised(error, cause):
        ...     try:
        ...         raise error from cause
        ...     except Exception as e:
        ...         return e
        >>> unavailable(raised(ConnectorException(), psycopg.OperationalError("server closed")))
        True
        >>> duplicate = UniqueViolation(constraint_name="x", queueing_lock=None)
        >>> unavailable(raised(duplicate, psycopg.IntegrityError("dup")))
        False
    """
    cause = unwrap_error(error)
    # (by name: the store alone imports the drivers, tests/server/test_sql_owner.py)
    driver = any(k.__name__ == "OperationalError" and k.__module__.startswith("psycopg")
                 for k in type(cause).__mro__)
    return driver or is_transient(cause)
