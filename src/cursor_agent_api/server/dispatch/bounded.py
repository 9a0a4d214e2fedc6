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
  database (its ``statement_timeout``), and a transaction left idle twice the waits
  (``connect_timeout + statement_timeout``; its process frozen) ends its session, its locks with
  it (``idle_in_transaction_session_timeout``);
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

**Once stopping** (a worker's SIGTERM: :meth:`BoundedConnector.give_up_within`) every query
of the queue, those in flight included (Procrastinate's last fetch, heartbeat, its LISTEN
connection, its worker's unregistration), is given up within a few seconds: a host that does
not answer held a worker's stop up to the whole bound (70 s) per query. Its **LISTEN
connection** (a worker's wait for new jobs) that fails is opened again, said once when it fails
and once when it is back (:meth:`BoundedConnector.listen_notify`): Procrastinate's own gave up
for good at the first connection refused, without a word (the worker then waited for its
5 s poll for every run).

A query given up, or that failed because the database is unavailable (a transient error:
:func:`~..store.is_transient`), raises :class:`~..store.StoreUnavailableError`, the
store's own error: the API answers its JSON 503 ("the database is unavailable"), a worker's
log says it in one line. Any other failure (a unique violation Procrastinate handles
itself) is raised as Procrastinate raised it.

Example:
    >>> c = BoundedConnector("host=127.0.0.1 dbname=db", connect_timeout=10, statement_timeout=60)
    >>> c.bound, c._pool_args["kwargs"]["options"], c._pool_args["kwargs"]["keepalives_idle"]
    (70.0, '-c statement_timeout=60000 -c idle_in_transaction_session_timeout=140000', 4)
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
from collections.abc import Awaitable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import anyio
import procrastinate
import psycopg_pool

from ..store import StoreUnavailableError, describe_error, is_transient
from ..store.engine import KeepAlive, idle_transactions
from ..store.errors import unwrap_error

T = TypeVar("T")

logger = logging.getLogger("cursor_agent_api.worker")

LISTEN_RETRY = 1.0
"""Seconds between two openings of the job queue's LISTEN connection, while it fails."""


class BoundedConnector(procrastinate.PsycopgConnector):
    """Procrastinate's psycopg connector whose queries wait as the store's do (see the
    module's text)."""

    def __init__(self, conninfo: str, *, connect_timeout: float, statement_timeout: float,
                 min_size: int = 1, max_size: int = 4) -> None:
        self.bound = float(connect_timeout + statement_timeout)
        connect = max(1, math.ceil(connect_timeout))
        # the pool's opening waits for its first connection: two attempts' worth, not 30 s
        self.opens_within = float(2 * max(2, connect))  # (libpq waits 2 s at least)
        # A statement waits statement_timeout, and a transaction left idle twice the waits
        # ends its session (idle_transactions()): after the URL's own options (this keyword
        # argument replaces the conninfo's), which they override.
        settings = {"statement_timeout": str(max(1, round(statement_timeout * 1000))),
                    **idle_transactions(connect_timeout, statement_timeout)}
        try:  # (libpq_url writes each value percent-encoded, never a '+' for a space)
            own = parse_qs(urlsplit(conninfo).query).get("options", [""])[-1]
        except ValueError:  # (serve and worker refuse such a URL first: database_url_problem)
            own = ""
        options = " ".join([*([own] if own else []),
                            *(f"-c {name}={value}" for name, value in settings.items())])
        super().__init__(
            pool_factory=functools.partial(_BoundedOpenPool, opens_within=self.opens_within),
            conninfo=conninfo,
            min_size=min_size,
            max_size=max_size,
            timeout=self.bound,  # the pool's own wait for a connection
            kwargs={
                "connect_timeout": connect,
                "options": options,
                **KeepAlive.within(connect_timeout).libpq(),
            },
        )
        self.gives_up_within = math.inf
        """Once stopping (:meth:`give_up_within`): the bound of every query, in seconds."""
        self._waiting: set[anyio.CancelScope] = set()  # the queries in flight, the LISTEN

    def give_up_within(self, seconds: float) -> None:
        """From now on each query is given up after ``seconds`` at most, those in flight
        ``seconds`` from now (the LISTEN connection is closed then): a worker that stops
        does not wait the whole :attr:`bound` for a host that does not answer. Called on
        the event loop; a later call only shortens.

        Example:
            >>> async def demo() -> tuple[float, float]:
            ...     c = BoundedConnector("host=127.0.0.1 dbname=db", connect_timeout=10,
            ...                          statement_timeout=60)
            ...     c.give_up_within(5.0)
            ...     c.give_up_within(30.0)  # (only shortens)
            ...     return c.gives_up_within, c._query_bound()
            >>> asyncio.run(demo())
            (5.0, 5.0)
        """
        self.gives_up_within = min(self.gives_up_within, seconds)
        deadline = anyio.current_time() + seconds
        for scope in self._waiting:
            scope.deadline = min(scope.deadline, deadline)

    def _query_bound(self) -> float:
        return min(self.bound, self.gives_up_within)

    @contextmanager
    def _given_up(self, entered: Any) -> Iterator[anyio.CancelScope]:
        """The cancel scope ``entered`` gives (``anyio.fail_after``'s, or a scope itself),
        shortened by :meth:`give_up_within` while it is entered."""
        with entered as scope:
            self._waiting.add(scope)
            try:
                yield scope
            finally:
                self._waiting.discard(scope)

    async def _bounded(self, query: Awaitable[T]) -> T:
        """``query``'s result, given up after :attr:`bound` seconds (fewer once stopping:
        :meth:`give_up_within`); the database's unavailability as
        :class:`~..store.StoreUnavailableError`."""
        bound, start = self._query_bound(), anyio.current_time()
        try:
            # anyio's scope, not asyncio.wait_for: before Python 3.12 wait_for can lose a cancel
            # of the caller (a worker's stop cancels its heartbeat loop) that comes as the query
            # ends; and a scope's cancel is delivered again until the query ends (psycopg's
            # attempt to cancel the query on the server, up to 10 s, is cut short)
            with self._given_up(anyio.fail_after(bound)) as scope:
                return await query
        except TimeoutError as e:
            within = round(min(bound, max(0.0, scope.deadline - start)), 1)  # (shortened since)
            raise StoreUnavailableError(
                f"the database did not answer the job queue within {within:g} s"
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

    async def listen_notify(self, on_notification: Any, channels: Iterable[str]) -> None:
        """Procrastinate's LISTEN for new jobs (its worker's wait), opened again whenever it
        fails: Procrastinate's own loop ended for good, unnoticed, at the first opening that
        failed (a database restarting refuses connections for a few seconds). Said once when
        it fails and once when it is back; meanwhile new jobs are taken at each poll. Once
        stopping (:meth:`give_up_within`), it ends."""
        channels = list(channels)
        failed = False
        with self._given_up(anyio.CancelScope()):
            while True:
                try:
                    async with self._get_standalone_connection() as connection:
                        for channel in channels:
                            await connection.execute(query=self._make_dynamic_query(
                                query=procrastinate.sql.queries["listen_queue"],
                                channel_name=channel))
                        if failed:
                            failed = False
                            logger.warning("the job queue's LISTEN connection is back")
                        # returns when the connection is lost (psycopg's OperationalError)
                        await self._loop_notify(on_notification=on_notification, connection=connection)
                    why = "the connection was lost"
                except Exception as e:
                    why = describe_error(e)
                if not failed:
                    failed = True
                    logger.warning("the job queue's LISTEN connection failed (%s); opening it again "
                                   "(new runs are taken at each poll meanwhile)", why)
                await asyncio.sleep(LISTEN_RETRY)

    async def close_async(self) -> None:
        """Close the pool; once stopping (:meth:`give_up_within`), its tasks still opening
        connections to a host that does not answer are left after a second (psycopg waits
        5 s for them)."""
        pool = self._async_pool
        if pool is None or self._pool_externally_set or math.isinf(self.gives_up_within):
            await super().close_async()
            return
        await pool.close(timeout=min(1.0, self.gives_up_within))
        self._async_pool = None

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
