"""The database engine and its life: opening it (SQLite's file and pragmas, the pool,
TCP keepalive on PostgreSQL's connections: :class:`KeepAlive`), the migrations (Alembic,
``server/migrations/``), write transactions (serialized on SQLite, counted in
:class:`~.health.StoreHealth`), read snapshots, closing.

Example:
    >>> StoreEngine("sqlite+aiosqlite:////tmp/x.sqlite3").is_sqlite
    True
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import os
import socket
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from ...database_urls import engine_args
from ...server_options import LIVE_WITHIN as LIVE_WITHIN  # (checked before the server imports)
from ...server_options import LONGEST_HEARTBEAT as LONGEST_HEARTBEAT
from ..sqlite_file import prepare_sqlite_file
from .encoding import json_dumps
from .errors import (
    MigrationError,
    SchemaInUseError,
    SchemaTooNewError,
    StoreUnavailableError,
    describe_error,
    driver_errors_wrapped,
    error_text,
    is_transient,
)
from .health import StoreFaults, StoreHealth

MIGRATIONS_DIR = Path(__file__).parent.parent / "migrations"
SQLITE_PAGE_SIZE = 16384
"""The page size of a new SQLite database (``PRAGMA page_size``)."""
_logger = logging.getLogger("cursor_agent_api.server")
_SQLITE_PRAGMAS = ("synchronous=NORMAL", "foreign_keys=ON")
"""Every SQLite connection's settings, besides its busy timeout."""


def run_migrations(sync_connection: Any) -> None:
    """Upgrade the database on ``sync_connection`` to the newest schema (Alembic ``head``),
    in one transaction: all of it or none (a failure, a kill or a full disk midway leaves
    the database as it was; the next start runs the migrations again).

    On SQLite the connection takes the write lock first (``BEGIN IMMEDIATE``) when a
    migration is due: another process that starts at the same moment waits for it (its busy
    timeout), then finds the schema up to date. A schema up to date takes no write lock (read
    first): a start while another process holds it serves, as writes wait. pysqlite itself
    would run each ``CREATE``/``ALTER`` outside any
    transaction (committed at once), so the transaction is begun here by hand. On
    PostgreSQL (transactional DDL) the migrations take an advisory lock (here and in
    ``env.py``); a migration due while processes of the older version use the database
    (workers, API servers) is refused: :class:`SchemaInUseError`, nothing changed.

    A failure is a :class:`MigrationError` that names the migration and what went wrong.
    """
    from alembic import command
    from alembic.config import Config
    from alembic.util.exc import CommandError

    if sync_connection.dialect.name == "sqlite":
        # no transaction of pysqlite's own (isolation_level None): ours, from the first statement
        sync_connection.execution_options(isolation_level="AUTOCOMMIT")
        if _sqlite_revision(sync_connection) == _last_migration().split("_")[0]:
            return  # up to date: no write lock (a start while another process writes serves)
        sync_connection.exec_driver_sql("BEGIN IMMEDIATE")  # (Alembic reads the version again)
    elif sync_connection.dialect.name == "postgresql" and _upgrade_alone(sync_connection):
        sync_connection.commit()  # up to date: the lock released, Alembic not needed
        return
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["connection"] = sync_connection
    applied: list[str] = cfg.attributes.setdefault("applied", [])
    try:
        command.upgrade(cfg, "head")
    except CommandError as exc:
        if "Can't locate revision" not in str(exc):
            raise
        raise SchemaTooNewError(
            "the database was upgraded by a newer cursor-agent-api (its schema is past this "
            f"version's last migration, {_last_migration()}): upgrade cursor-agent-api, or "
            "use another database (--database-url)") from None
    except Exception as exc:
        where = ""
        if "from" in cfg.attributes:  # the version was read: a migration failed
            where = f" in migration {_failed_migration(cfg.attributes['from'], len(applied))}"
        raise MigrationError(
            f"upgrading the database's schema failed{where}: {error_text(exc)}; nothing was "
            "changed, the next start tries again"
        ) from exc
    sync_connection.commit()


MIGRATION_LOCK = 0x63757273  # an advisory lock key of this project's own ("curs")
"""The PostgreSQL advisory lock the migrations hold (here and in ``migrations/env.py``)."""

_LIVE_SERVERS = ("cursor-agent-api-listen", "cursor-agent-api-sessions")
"""The ``application_name`` of an API server's listening connections (every version since
the distributed mode: ``notify.LISTEN_APPLICATION_NAME``, ``session_watch.SESSIONS_APPLICATION_NAME``)."""


def _upgrade_alone(sync_connection: Any) -> bool:
    """On PostgreSQL, before a migration: take the migrations' lock (the one ``env.py`` takes:
    the processes starting at once migrate one after the other, and the one that migrates
    checks alone), then refuse with :class:`SchemaInUseError` when a migration is due while
    older processes use the database: workers whose heartbeat is under :data:`LIVE_WITHIN`
    seconds old, API servers with a listening connection open. A new database, or one up
    to date, is not checked. True when it is up to date (nothing to migrate)."""
    from sqlalchemy import text

    sync_connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
    if sync_connection.execute(text("SELECT to_regclass('alembic_version')")).scalar() is None:
        return False  # a new database: nobody's
    current = sync_connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
    last = _last_migration().split("_")[0]
    if current is not None and str(current) == last:
        return True
    if current is None or str(current) > last:
        return False  # nothing recorded yet; or newer: SchemaTooNewError, from Alembic
    workers = 0
    if sync_connection.execute(text("SELECT to_regclass('procrastinate_workers')")).scalar() is not None:
        workers = int(sync_connection.execute(
            text("SELECT count(*) FROM procrastinate_workers "
                 "WHERE last_heartbeat > now() - make_interval(secs => :within)"),
            {"within": LIVE_WITHIN}).scalar() or 0)
    servers = int(sync_connection.execute(
        text("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
             "AND pid <> pg_backend_pid() AND application_name = ANY(:names)"),
        {"names": list(_LIVE_SERVERS)}).scalar() or 0)
    if workers or servers:
        using = " and ".join([f"{workers} worker(s)"] * bool(workers)
                             + [f"{servers} API server connection(s)"] * bool(servers))
        raise SchemaInUseError(
            f"the schema is at {current}, this version's at {last}, and {using} of the older "
            "version use it: stop them first (docs/distributed.md: Upgrading a cluster)")
    return False


def _sqlite_revision(sync_connection: Any) -> str | None:
    """The schema's revision as stored (Alembic's ``alembic_version``), read without the
    write lock; None for a new database."""
    from sqlalchemy.exc import OperationalError

    try:
        value = sync_connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
    except OperationalError:  # no such table: nothing migrated yet
        return None
    return None if value is None else str(value)


def _migrations() -> list[str]:
    """The migrations' file names, in order (``0001_initial``, …): revision ``0001`` is the
    first's."""
    return sorted(p.stem for p in (MIGRATIONS_DIR / "versions").glob("[0-9]*.py"))


def _last_migration() -> str:
    names = _migrations()
    return names[-1] if names else "none"


def _failed_migration(start: str | None, applied: int) -> str:
    """The migration that failed: the ``applied + 1``-th after revision ``start``.

    Example:
        >>> _failed_migration("0004", 1)
        '0006_compact_events'
    """
    pending = [n for n in _migrations() if start is None or n.split("_")[0] > start]
    return pending[applied] if applied < len(pending) else "?"


# TCP keepalive on every connection to PostgreSQL: a host that stops answering (packets
# dropped, the connection still open) is noticed within about ``store_connect_timeout`` while
# the connection waits for an answer (a migration's or a statement's lock wait, a long
# statement, a LISTEN): everything sent was acknowledged, the connection is idle to TCP, so
# the kernel probes it, and an alive server, however busy, answers the probes (its kernel
# does). No TCP_USER_TIMEOUT: it would cut a connection whose server only stops reading for a
# while (its receive buffer full: a large batch of writes queued behind a row lock; the
# zero-window probes count as unacknowledged data), and with it Linux ends a silent
# connection at the user timeout instead of after the probes. A host that dies while data is
# in flight (sent, never acknowledged) is left to the statement timeouts (asyncpg's
# ``command_timeout``, libpq's ``statement_timeout`` and BoundedConnector's bound); the
# migrations have none: TCP's own retransmissions end it (about 15 minutes). For libpq
# (psycopg: Procrastinate's pool and its LISTEN connection, KeepAlive.libpq) and asyncpg (the
# store's pool, its LISTEN connections and the migrations' connection: kept_alive, asyncpg's
# connection_class).


def idle_transactions(connect_timeout: float, statement_timeout: float) -> dict[str, str]:
    """PostgreSQL's settings that end a session whose transaction stays idle twice the waits of
    a query (``connect_timeout + statement_timeout``, whole milliseconds): its process is
    frozen (SIGSTOP, a paused VM) or cut off, and its locks go with it. Twice, so that a client
    cut off mid-transaction gives up first, with its own error (the host did not answer). For
    the pooled connections, whose transactions only wait on the database; not for LISTEN
    (never in a transaction) nor the migrations (whose lock may be waited for longer).

    Example:
        >>> idle_transactions(10, 60)
        {'idle_in_transaction_session_timeout': '140000'}
    """
    seconds = 2 * (connect_timeout + statement_timeout)
    return {"idle_in_transaction_session_timeout": str(max(1, round(seconds * 1000)))}


@dataclass(frozen=True)
class KeepAlive:
    """TCP keepalive for a connection to PostgreSQL (see the comment above): probes after
    ``idle`` seconds of silence, every ``interval`` seconds, ``count`` of them unanswered and
    the connection is dead (:attr:`bound` seconds after the last thing heard).

    Example:
        >>> k = KeepAlive.within(10)  # store_connect_timeout's default
        >>> k.idle, k.interval, k.count, k.bound
        (4, 2, 3, 10)
        >>> k.libpq()["keepalives_idle"], "tcp_user_timeout" in k.libpq(), KeepAlive.within(0.5).bound
        (4, False, 4)
    """

    idle: int
    interval: int
    count: int

    @classmethod
    def within(cls, seconds: float) -> KeepAlive:
        """Settings that declare a silent host dead after about ``seconds`` (``idle +
        interval * count``, in whole seconds, 1 at least each: 4 s at the least)."""
        count = 3
        interval = max(1, math.floor(seconds / 5))
        idle = max(1, math.ceil(seconds) - interval * count)
        return cls(idle, interval, count)

    @property
    def bound(self) -> int:
        """Seconds of silence after which an idle connection is declared dead."""
        return self.idle + self.interval * self.count

    def libpq(self) -> dict[str, Any]:
        """libpq's connection parameters for it (psycopg's ``kwargs``; its
        ``tcp_user_timeout`` left at its default, none)."""
        return {"keepalives": 1, "keepalives_idle": self.idle,
                "keepalives_interval": self.interval, "keepalives_count": self.count}

    def apply(self, sock: Any) -> None:
        """Set it on ``sock`` (a TCP socket; a Unix socket is left alone)."""
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for name, value in (("TCP_KEEPIDLE", self.idle), ("TCP_KEEPINTVL", self.interval),
                            ("TCP_KEEPCNT", self.count)):
            option = getattr(socket, name, None)  # (Linux's; macOS has TCP_KEEPALIVE instead)
            if option is not None:
                sock.setsockopt(socket.IPPROTO_TCP, option, value)


@functools.cache
def kept_alive(keepalive: KeepAlive) -> type[Any]:
    """asyncpg's connection class that sets ``keepalive`` on its socket as it opens (one
    class per :class:`KeepAlive`: cached).

    asyncpg has no option for keepalive, and no public way to a connection's socket (SQLAlchemy
    neither: its pool events and ``async_creator`` give asyncpg's connection, whose transport
    is a private attribute). ``connection_class`` is asyncpg's public parameter; what its
    constructor is given (the protocol, then the transport) is asyncpg's own, unchanged since
    0.18 but undocumented: were it to change, the connection opens without keepalive rather
    than failing (``tests/server/test_keepalive.py`` would fail).

    Example:
        >>> kept_alive(KeepAlive.within(10)) is kept_alive(KeepAlive.within(10))
        True
    """
    import asyncpg  # type: ignore[import-untyped]

    class KeptAliveConnection(asyncpg.Connection):  # type: ignore[misc]
        def __init__(self, protocol: Any, transport: Any, *args: Any, **kwargs: Any) -> None:
            with contextlib.suppress(AttributeError, OSError):
                sock = transport.get_extra_info("socket")  # (asyncio's public transport API)
                if sock is not None:
                    keepalive.apply(sock)
            super().__init__(protocol, transport, *args, **kwargs)

    return KeptAliveConnection


class OneLinePoolErrors(logging.Filter):
    """SQLAlchemy's pool logs a connection it could not reset or close (the database went
    away, asyncpg's "cannot switch to state …") at ERROR with the traceback; the pool then
    drops that connection, and the next checkout opens a new one. This makes the record one
    line: its message and the error (:func:`~.errors.describe_error`: no SQL, no values).

    Example:
        >>> import sys
        >>> try:
        ...     raise ConnectionResetError(104, "Connection reset by peer")
        ... except OSError:
        ...     record = logging.LogRecord("p", logging.ERROR, "f", 1, "Exception during reset or "
        ...                                "similar", None, sys.exc_info())
        >>> OneLinePoolErrors().filter(record), record.exc_info
        (True, None)
        >>> record.getMessage()
        'Exception during reset or similar: [Errno 104] Connection reset by peer (ConnectionResetError)'
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            record.msg = f"{record.getMessage()}: {describe_error(record.exc_info[1])}"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


def _one_line_pool_errors(engine: AsyncEngine) -> None:
    """Put :class:`OneLinePoolErrors` on the logger of ``engine``'s pool (once)."""
    pool_logger: Any = engine.sync_engine.pool.logger
    target: logging.Logger = getattr(pool_logger, "logger", pool_logger)  # (InstanceLogger: echo_pool)
    if not any(isinstance(f, OneLinePoolErrors) for f in target.filters):
        target.addFilter(OneLinePoolErrors())


class PooledConnections:
    """The connections ``engine``'s pool (PostgreSQL's) opens, followed from now on, and
    their close within a bound (:meth:`close`).

    SQLAlchemy's ``engine.dispose()`` closes the pool's connections one after the other, each
    gracefully: asyncpg sends its goodbye (``Terminate``) and waits for the database to end
    the connection, up to the ``command_timeout`` (``store_statement_timeout``, 60 s). A host
    that stopped answering (packets dropped: the connections stay open) held a stop (SIGTERM)
    of a worker or an API server that long per connection, up to 10 minutes for the pool's
    10, each logged as an "Exception closing connection". :meth:`close` closes them together
    within one bound (``store_connect_timeout``: a goodbye is one round trip, as a
    connection's opening is) and drops those still unanswered then, or whose close failed
    otherwise (asyncpg's ``Connection.terminate()``), in one line; ``dispose()`` then finds
    them closed. The connections are known through the pool's public ``connect`` event (its
    ``ConnectionPoolEntry``, whose ``driver_connection`` is asyncpg's); one checked out at
    that moment (a request still in flight) is left to the pool, as ``dispose()`` leaves it.

    Example:
        >>> async def demo() -> int:
        ...     engine = create_async_engine("postgresql+asyncpg://u@127.0.0.1/db")  # unconnected
        ...     dropped = await PooledConnections(engine).close(within=1.0)
        ...     await engine.dispose()
        ...     return dropped
        >>> asyncio.run(demo())
        0
    """

    def __init__(self, engine: AsyncEngine) -> None:
        # a pool entry lives as long as the pool keeps it (its connection opened again in it
        # after a failure: the event again)
        self._entries: weakref.WeakSet[Any] = weakref.WeakSet()
        event.listen(engine.sync_engine.pool, "connect", self._connected)
        event.listen(engine.sync_engine, "do_connect", self._connecting)

    def _connecting(self, _dialect: Any, _record: Any, _args: Any, params: dict[str, Any]) -> None:
        """A new connection's opening (asyncpg's ``timeout``) waits :attr:`command_bound` at
        most, once set."""
        if self.command_bound is not None and "timeout" in params:
            params["timeout"] = min(float(params["timeout"]), self.command_bound)

    def _connected(self, _dbapi_connection: Any, entry: Any) -> None:
        self._entries.add(entry)
        if self.command_bound is not None:
            _bound_commands(entry.driver_connection, self.command_bound)

    command_bound: float | None = None
    """Once stopping (:meth:`bound_commands`): each statement's bound, in seconds."""

    def bound_commands(self, seconds: float) -> None:
        """From now on each statement on the pool's connections (those open, those opened
        later) is given up after ``seconds`` at most, not the ``command_timeout``
        (``store_statement_timeout``), and a new connection's opening as long: a worker that
        stops (its runs' ends recorded) does not wait a minute per statement for a host that
        does not answer. A later call only shortens. (A statement already sent keeps its own
        bound.)"""
        self.command_bound = min(seconds, self.command_bound or seconds)
        for entry in list(self._entries):
            if entry.dbapi_connection is not None and entry.driver_connection is not None:
                _bound_commands(entry.driver_connection, self.command_bound)

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
        drop those that did not close cleanly (no answer by then, or the connection broke
        meanwhile), logged in one line. How many were dropped."""
        results = await asyncio.gather(*(_close(conn, within) for conn in self.idle()))
        dropped = results.count(False)
        if dropped:
            _logger.warning("the database's connections did not close cleanly (no answer within "
                            "%g s, or the connection broke): %d connection(s) dropped",
                            within, dropped)
        return dropped


def _bound_commands(conn: Any, seconds: float) -> None:
    """asyncpg's ``command_timeout`` of ``conn`` at most ``seconds`` (asyncpg reads it from
    the connection's configuration at each statement; it has no public setter)."""
    config = getattr(conn, "_config", None)
    if config is None or not hasattr(config, "_replace"):
        return
    current = config.command_timeout
    if current is None or current > seconds:
        conn._config = config._replace(command_timeout=seconds)


async def _close(conn: Any, within: float) -> bool:
    """Close asyncpg's ``conn`` gracefully within ``within`` seconds, else drop it: whether it
    closed gracefully."""
    try:
        await conn.close(timeout=within)
    except Exception:  # no answer in time (TimeoutError), or the connection broke meanwhile
        # (asyncpg aborted it already: this makes sure; a failure here must not keep the
        # engine's dispose() from running)
        with contextlib.suppress(Exception):
            conn.terminate()
        return False
    return True


class StoreEngine:
    """The engine of the server's database (an SQLite file or PostgreSQL) and its life:
    :meth:`start` once (creates the SQLite directory, sets WAL, runs the migrations),
    :meth:`close` at the end; write transactions and read snapshots. The other parts of
    :class:`~cursor_agent_api.server.store.Store` build on it.

    Example:
        >>> StoreEngine("sqlite+aiosqlite:////tmp/x.sqlite3").dialect
        'sqlite'
    """

    def __init__(self, url: str, *, busy_timeout: float = 30.0, connect_timeout: float = 10.0,
                 statement_timeout: float = 60.0) -> None:
        self.url = url
        self.dialect = make_url(url).get_backend_name()
        self.busy_timeout = busy_timeout
        self.connect_timeout = connect_timeout
        self.statement_timeout = statement_timeout
        self.faults = StoreFaults()
        self.health = StoreHealth(probe=self.file_problem)
        # SQLite: the database file's path, device and inode, as opened (file_problem)
        self._file: tuple[str, int, int] | None = None
        # Values over BIG_VALUE bytes are handled one at a time in this process (a write of
        # one, or a read of one): each costs a few copies of itself, not of all of them.
        self._big_values = asyncio.Lock()
        self._engine: AsyncEngine | None = None
        self._pooled: PooledConnections | None = None  # PostgreSQL: closed within a bound
        self._closed = False
        self._run_nums: dict[str, int] = {}
        self._chats: dict[str, tuple[int, int]] = {}  # chat id: (its key, last_seq committed)
        self._writer: Any = None  # SQLite: the write path's aiosqlite connection
        # SQLite: the write path's connection used in the event loop's thread, that never
        # waits for SQLite's lock (busy_timeout 0: see LogWrites._append_fast)
        self._inline_writer: Any = None
        # the WAL the inline connection wrote since the last checkpoint (an estimate, in bytes:
        # LogWrites._append_fast), the page size, and the WAL that makes a checkpoint
        # (SQLite's own automatic checkpoint: 1,000 pages)
        self._unchecked_bytes = 0
        self._page_size = SQLITE_PAGE_SIZE
        self._checkpoint_bytes = 1000 * SQLITE_PAGE_SIZE
        self._tool_upserts: dict[tuple[str, ...], Any] = {}
        self._compiled_cache: dict[tuple[int, tuple[str, ...]], tuple[Any, Any]] = {}
        # SQLite has one writer at a time: serialize our writes in-process instead
        # of letting connections fight over the lock (no SQLITE_BUSY, FIFO order).
        self._write_lock: asyncio.Lock | None = asyncio.Lock() if self.is_sqlite else None

    @property
    def _kept_alive(self) -> type[Any]:
        """asyncpg's connection class with TCP keepalive (:class:`KeepAlive`)."""
        return kept_alive(KeepAlive.within(self.connect_timeout))

    @property
    def is_sqlite(self) -> bool:
        """True when the database is an SQLite file."""
        return self.dialect == "sqlite"

    @property
    def engine(self) -> AsyncEngine:
        """The SQLAlchemy engine (after :meth:`start`; :class:`StoreUnavailableError` once
        :meth:`close` ran: a request still in flight as the server shuts down gets a 503)."""
        if self._engine is None:
            if self._closed:
                raise StoreUnavailableError("the database is closed: the server is shutting down")
            raise RuntimeError("Store.start() was not called")
        return self._engine

    @contextlib.asynccontextmanager
    async def connect(self) -> AsyncIterator[AsyncConnection]:
        """A connection (SQLAlchemy's ``engine.connect()``) whose driver's own errors come out
        as SQLAlchemy's (:func:`~.errors.driver_errors_wrapped`): every read goes through it."""
        with driver_errors_wrapped():
            async with self.engine.connect() as conn:
                yield conn

    @contextlib.asynccontextmanager
    async def begin(self) -> AsyncIterator[AsyncConnection]:
        """A transaction outside :meth:`transaction`'s serializing and health (SQLAlchemy's
        ``engine.begin()``), its driver's errors wrapped as in :meth:`connect`."""
        with driver_errors_wrapped():
            async with self.engine.begin() as conn:
                yield conn

    async def start(self) -> None:
        """Open the engine and bring the schema up to date (once: a started store stays)."""
        if self._engine is not None:
            return
        url = make_url(self.url)
        kwargs: dict[str, Any] = {
            "json_serializer": json_dumps,
            "json_deserializer": orjson.loads,
        }
        if self.is_sqlite:
            prepare_sqlite_file(url.database or "")  # 0600, in a new directory 0700
            # No statement cache: sqlite3 keeps a cached statement's bound values until the
            # statement is used again, so the INSERT of a 30 MB line kept that line's copy
            # alive (30 MB more RSS; no cost in bench_server's throughput, BENCHMARKS.md).
            kwargs["connect_args"] = {"timeout": self.busy_timeout, "cached_statements": 0}
        else:
            kwargs["pool_size"] = 10
            kwargs["max_overflow"] = 20
            kwargs["pool_pre_ping"] = True
            # A host that stops answering (packets dropped) would hold a request for as long as
            # TCP keeps trying (~15 min): a new connection and a statement each wait so long,
            # then fail (a TimeoutError: the 503) and the connection is dropped.
            # A host that stops answering while the connection waits for an answer or idles:
            # TCP keepalive notices it within about connect_timeout (KeepAlive); one that
            # stops with a statement's data unacknowledged: the command_timeout.
            # A transaction left idle (its process frozen: SIGSTOP, a paused VM) would hold
            # its locks, and the sweep waiting on them, for as long as it stays frozen: the
            # database ends such a session after twice a query's waits (idle_transactions()).
            kwargs["connect_args"] = {"timeout": self.connect_timeout,
                                      "command_timeout": self.statement_timeout,
                                      "connection_class": self._kept_alive,
                                      "server_settings": idle_transactions(self.connect_timeout,
                                                                           self.statement_timeout)}
        engine_at, dsn = engine_args(self.url)  # PostgreSQL: the URL as asyncpg's DSN
        kwargs["connect_args"].update(dsn)
        engine = create_async_engine(engine_at, **kwargs)
        _one_line_pool_errors(engine)
        if not self.is_sqlite:
            self._pooled = PooledConnections(engine)
        if self.is_sqlite:
            busy_ms = self.busy_timeout * 1000

            @event.listens_for(engine.sync_engine, "connect")
            def _pragmas(dbapi_connection: Any, _record: Any) -> None:
                cur = dbapi_connection.cursor()
                # A new file's pages are 16 KiB (an existing file keeps its own): the log's
                # rows (WITHOUT ROWID) keep lines up to ~4 KB in their page, not on
                # overflow pages of 4 KiB mostly empty.
                cur.execute(f"PRAGMA page_size={SQLITE_PAGE_SIZE}")
                cur.execute("PRAGMA journal_mode=WAL")
                for pragma in (*_SQLITE_PRAGMAS, f"busy_timeout={int(busy_ms)}"):
                    cur.execute(f"PRAGMA {pragma}")
                cur.close()

        self._engine = engine
        if self.is_sqlite:
            async with self._writing(), engine.connect() as conn:
                await conn.run_sync(run_migrations)
        else:
            # The migrations take what they take (a big table's upgrade; another process's
            # migrations, whose lock they wait for): a connection of their own, with no
            # statement timeout. A host that stops answering while they wait for an answer
            # is noticed by TCP keepalive (KeepAlive), within about connect_timeout: the
            # start fails (one that dies with a statement unacknowledged: TCP's retries).
            migrator = create_async_engine(engine_at, poolclass=NullPool,
                                           connect_args={**dsn, "timeout": self.connect_timeout,
                                                         "connection_class": self._kept_alive})
            try:
                async with migrator.connect() as conn:
                    await conn.run_sync(run_migrations)
            finally:
                await migrator.dispose()
        if self.is_sqlite:
            import aiosqlite

            # the write path's own connection (see _append_fast): transactions by hand
            path = url.database or ""
            writer = await aiosqlite.connect(path, timeout=self.busy_timeout, isolation_level=None)
            for pragma in (*_SQLITE_PRAGMAS, f"busy_timeout={int(busy_ms)}"):
                await writer.execute(f"PRAGMA {pragma}")
            self._writer = writer
            # The same, used in the event loop's thread (a batch's transaction is ~2 ms of
            # SQLite; two thread hand-offs per batch cost more on a loaded machine): it never
            # waits for the lock (another process writing), the driver's connection does.
            import sqlite3

            # It never checkpoints either (wal_autocheckpoint=0): a checkpoint copies the WAL
            # into the file and syncs it (~20 ms for SQLite's default 1,000 pages, here), which
            # would hold up the loop; the driver's connection runs it (LogWrites._append_fast).
            inline = sqlite3.connect(path, timeout=0, isolation_level=None, check_same_thread=False)
            for pragma in (*_SQLITE_PRAGMAS, "busy_timeout=0", "wal_autocheckpoint=0"):
                inline.execute(f"PRAGMA {pragma}")
            (page_size,) = inline.execute("PRAGMA page_size").fetchone()  # an old file's own
            self._page_size = int(page_size)
            self._checkpoint_bytes = 1000 * self._page_size
            self._inline_writer = inline
            if path and path != ":memory:" and not path.startswith("file:"):
                st = os.stat(path)
                self._file = (path, st.st_dev, st.st_ino)

    async def schema_past_ours(self) -> str | None:
        """The schema's revision when a newer version upgraded it since this process started
        (past this version's last migration: this process's writes may fail now), else
        ``None``. One small read; PostgreSQL only (``None`` on SQLite)."""
        if self.is_sqlite:
            return None
        from sqlalchemy import text

        async with self.connect() as conn:
            current = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar()
        if current is not None and str(current) > _last_migration().split("_")[0]:
            return str(current)
        return None

    def file_problem(self) -> str | None:
        """What is wrong with the SQLite file the store has open, or ``None``: deleted,
        moved or replaced while the server runs, its writes would go to a file no restart
        finds (lost). One ``stat``, before each write and at each look at :attr:`health`.

        Example:
            >>> import asyncio, os, tempfile
            >>> async def demo() -> tuple[str | None, str | None]:
            ...     store = StoreEngine(f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/db.sqlite3")
            ...     await store.start()
            ...     before = store.file_problem()
            ...     os.remove(store.url.split("///", 1)[1])
            ...     after = store.file_problem()
            ...     await store.close()
            ...     return before, after
            >>> before, after = asyncio.run(demo())
            >>> before, after.split(": ")[0], after.split("; ")[1].split(" (")[0]
            (None, 'the database file was deleted or replaced while the server ran', 'restart the server')
        """
        if self._file is None:
            return None
        path, dev, ino = self._file
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            st = None
        except OSError:
            return None  # unreadable for now (a permission, an I/O error): not a verdict
        if st is not None and (st.st_dev, st.st_ino) == (dev, ino):
            return None
        return ("the database file was deleted or replaced while the server ran: writes are "
                f"refused (they would be lost); restart the server ({path})")

    def may_write(self, purpose: str) -> None:
        """Raise :class:`StoreUnavailableError` if a write of ``purpose`` must not be made:
        the database file is gone (:meth:`file_problem`), or a fault is injected (:attr:`faults`)."""
        why = self.file_problem()
        if why is not None:
            raise StoreUnavailableError(why)
        self.faults.check(purpose)

    def give_up_within(self, seconds: float) -> None:
        """PostgreSQL: from now on each statement is given up after ``seconds`` at most
        (:meth:`PooledConnections.bound_commands`): a worker that stops. SQLite: nothing
        (no host to wait for)."""
        if self._pooled is not None:
            self._pooled.bound_commands(seconds)

    async def close(self) -> None:
        """Dispose of the engine's connections; later calls raise :class:`StoreUnavailableError`.

        On PostgreSQL the pool's connections are closed within :attr:`connect_timeout`
        seconds, together: those the database did not answer by then are dropped, said in one
        line (:class:`PooledConnections`), rather than each waited for up to the
        statement timeout."""
        if self._engine is not None:
            self._closed = True
        if self._inline_writer is not None:
            self._inline_writer.close()
            self._inline_writer = None
        if self._writer is not None:
            await self._writer.close()
            self._writer = None
        if self._pooled is not None:
            await self._pooled.close(within=self.connect_timeout)
            self._pooled = None
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None
        self._file = None

    @contextlib.asynccontextmanager
    async def _writing(self) -> AsyncIterator[None]:
        if self._write_lock is None:
            yield
            return
        async with self._write_lock:
            yield

    @contextlib.asynccontextmanager
    async def transaction(self, purpose: str = "write") -> AsyncIterator[AsyncConnection]:
        """A write transaction (serialized with the others on SQLite).

        A transient failure (:func:`is_transient`) marks the store degraded
        (:attr:`health`) until a write succeeds. ``purpose`` names the write for
        :attr:`faults` (``"events"``, ``"run_create"``, ``"run_start"``, ``"run_end"``, ``"write"``).
        """
        try:
            with driver_errors_wrapped():
                async with self._writing(), self.engine.begin() as conn:
                    self.may_write(purpose)
                    yield conn
            self.faults.check_committed(purpose)
        except Exception as e:
            if is_transient(e):
                self.health.failed(describe_error(e), e)
            raise
        self.health.succeeded()

    def clean_text(self, value: str | None) -> str | None:
        r"""``value`` made storable: PostgreSQL text cannot hold NUL (U+FFFD instead).

        Example:
            >>> StoreEngine("postgresql+asyncpg://h/d").clean_text("a\x00")
            'a\ufffd'
        """
        if value is not None and not self.is_sqlite and "\x00" in value:
            return value.replace("\x00", "\ufffd")
        return value

    _clean_text = clean_text

    @contextlib.asynccontextmanager
    async def snapshot(self) -> AsyncIterator[AsyncConnection]:
        """A connection whose reads see one consistent state of the database: PostgreSQL's
        ``REPEATABLE READ``; on SQLite, this process's writes wait meanwhile (they are
        serialized here, and SQLite gives a bare SELECT no snapshot of its own)."""
        if self.is_sqlite:
            async with self._writing(), self.connect() as conn:
                yield conn
            return
        async with self.connect() as conn:
            conn = await conn.execution_options(isolation_level="REPEATABLE READ")
            async with conn.begin():
                yield conn
