"""What can go wrong with the database, and how the store says so.

The store's own errors (:class:`ActiveRunError`, :class:`NotFoundError`, :class:`RunEndedError`,
:class:`StoreUnavailableError`, :class:`SchemaTooNewError`, :class:`MigrationError`),
:data:`DatabaseError` (any failure of the database layer, for the modules that must catch one
without knowing the library under it), :func:`is_transient` (retry or not) and
:func:`describe_error` (one line, never the SQL statement or its parameters;
:func:`error_text` for a failure that is not about a value sent).

Example:
    >>> describe_error(StoreUnavailableError("injected"))
    'injected (StoreUnavailableError)'
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

from sqlalchemy.exc import (
    DataError,
    DBAPIError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    PendingRollbackError,
    SQLAlchemyError,
)
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

DatabaseError = SQLAlchemyError
"""Any failure of the database layer (a lost connection, a refused statement): the store
raises no other (:func:`driver_errors_wrapped`) besides its own errors below."""


@functools.cache
def driver_errors() -> tuple[type[Exception], ...]:
    """What a database driver raises of its own, that SQLAlchemy wraps only when the driver
    raised it inside a statement: asyncpg's errors (``InterfaceError`` "cannot switch to
    state …; another operation is in progress", ``PostgresError`` while connecting,
    ``InternalClientError``), ``sqlite3.Error``, and ``OSError`` (the socket's: a
    connection refused or reset, no route to the host, a timeout).

    Example:
        >>> OSError in driver_errors(), ValueError in driver_errors()
        (True, False)
    """
    import sqlite3

    found: list[type[Exception]] = [sqlite3.Error, OSError]
    try:
        import asyncpg  # type: ignore[import-untyped]
    except ImportError:  # (SQLite only: the postgres extra is not installed)
        pass
    else:
        found += [asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError]
    return tuple(found)


def wrap_driver_error(exc: Exception) -> DBAPIError:
    """``exc`` (one of :func:`driver_errors`) as SQLAlchemy would have wrapped it in a
    statement, with no statement: a lost or refused connection, so transient
    (:func:`is_transient`), and described by its own first line (:func:`describe_error`).

    Example:
        >>> e = wrap_driver_error(ConnectionResetError(104, "Connection reset by peer"))
        >>> isinstance(e, DatabaseError), is_transient(e), describe_error(e)
        (True, True, '[Errno 104] Connection reset by peer (DBAPIError)')
    """
    wrapped = DBAPIError.instance(None, None, exc, Exception)
    assert isinstance(wrapped, DBAPIError)  # (no statement: never a StatementError)
    return wrapped


@contextlib.contextmanager
def driver_errors_wrapped() -> Iterator[None]:
    """Inside: a driver's own error (:func:`driver_errors`) that SQLAlchemy let through comes
    out as SQLAlchemy's (:func:`wrap_driver_error`), so whoever handles database failures
    (:data:`DatabaseError`: the API's 503, a WebSocket's close 1013, the retries) handles it
    too, instead of a plain 500 and a traceback. The store's connections and transactions
    are all opened inside one.

    Example:
        >>> with driver_errors_wrapped():
        ...     raise ConnectionRefusedError(111, "Connect call failed")
        Traceback (most recent call last):
        ...
        sqlalchemy.exc.DBAPIError: (builtins.ConnectionRefusedError) [Errno 111] Connect call failed
        ...
    """
    try:
        yield
    except SQLAlchemyError:
        raise
    except driver_errors() as e:
        raise wrap_driver_error(e) from e


class ActiveRunError(Exception):
    """The chat already has a queued or running run (one run at a time per chat).

    Example:
        >>> str(ActiveRunError("r1"))
        'r1'
    """


class NotFoundError(Exception):
    """A chat or run id that the store does not know."""


class RunEndedError(Exception):
    """The records' run is over already (``append``'s ``active_run``): nothing was written.

    A worker declared lost (an API server's sweep marked its run ``interrupted``) that comes
    back gets this for its late records: they never follow the run's final record.

    Example:
        >>> str(RunEndedError("r1"))
        'r1'
    """


class StoreUnavailableError(Exception):
    """The database cannot be written for now (an injected fault, or the store gave up).

    Example:
        >>> is_transient(StoreUnavailableError("injected"))
        True
    """


_SQLITE_TRANSIENT = ("locked", "busy", "readonly", "read-only", "disk i/o", "unable to open", "full")

_PG_TRANSIENT = ("08", "40", "53", "57", "58", "55P03", "25006")
"""The SQLSTATEs (classes, or codes) of a PostgreSQL failure that may go away by itself: a
connection lost or refused (class 08), a serialization failure or deadlock (40), a full
disk, no memory or too many connections (53), a timeout, cancel or shutdown (57), an I/O
error (58), a lock not available (55P03), a read-only standby (25006). Any other one (data
errors: class 22, a value out of range or too long, a NUL; 23, 42, …) is refused for what
was sent and would be refused again."""

_TOO_MANY_ARGUMENTS = "number of query arguments cannot exceed"
"""asyncpg's client-side refusal of a statement with more than 32,767 bound values."""


def _sqlstate(exc: DBAPIError) -> str | None:
    """The SQLSTATE of a database error, when its driver gives one (asyncpg through
    SQLAlchemy's adapter: ``orig.pgcode``; the adapter wraps every ``PostgresError`` it
    does not map in a plain :class:`DBAPIError`)."""
    code = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    return code if isinstance(code, str) and code else None


def is_transient(exc: BaseException) -> bool:
    """True for a failure that may go away by itself: a lock, a read-only or full disk,
    a dropped connection. Data errors and constraint violations are not transient.

    Example:
        >>> from sqlalchemy.exc import OperationalError, IntegrityError
        >>> is_transient(OperationalError("x", {}, Exception("database is locked")))
        True
        >>> is_transient(IntegrityError("x", {}, Exception("unique")))
        False

    PostgreSQL's errors (a plain :class:`DBAPIError` through asyncpg) by their SQLSTATE: a
    lost connection or a timeout is transient, a value the database refuses is not (it would
    be refused again: retried, the run would never end). Any error while connecting (no
    statement yet: the database not accepting connections, …) is transient.
    """
    if isinstance(exc, OperationalError) and type(exc.orig).__module__.startswith("sqlite3"):
        # sqlite3 calls everything an OperationalError, "no such table" included.
        message = str(exc.orig).lower()
        return any(m in message for m in _SQLITE_TRANSIENT)
    if isinstance(exc, InterfaceError) and isinstance(getattr(exc.orig, "__cause__", None), ValueError):
        return False  # asyncpg refused to send a value (its client-side DataError is one)
    if isinstance(exc, InterfaceError) and _TOO_MANY_ARGUMENTS in str(getattr(exc.orig, "__cause__", "")):
        return False  # a statement with too many bound values: it would be refused again
    if isinstance(exc, (StoreUnavailableError, OperationalError, InterfaceError, PoolTimeoutError)):
        return True
    if isinstance(exc, PendingRollbackError):
        return True
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated or exc.statement is None:
            return True  # lost, or refused while connecting (no statement): unavailable
        code = _sqlstate(exc)
        return code is not None and code.startswith(_PG_TRANSIENT)
    return isinstance(exc, (OSError, ConnectionError, TimeoutError))


def is_data_error(exc: BaseException) -> bool:
    """True for a value the database refuses to hold (a data error: out of range, too long,
    a NUL on PostgreSQL, SQLSTATE class 22; sqlite3's ``OverflowError`` for an integer past
    64 bits), not for a statement it cannot run or a constraint.

    Example:
        >>> is_data_error(OverflowError("Python int too large to convert to SQLite INTEGER"))
        True
        >>> from sqlalchemy.exc import OperationalError
        >>> is_data_error(OperationalError("x", {}, Exception("no such table: t")))
        False
    """
    if isinstance(exc, (OverflowError, DataError)):
        return True
    if isinstance(exc, DBAPIError):
        code = _sqlstate(exc)
        return code is not None and code.startswith("22")
    return False


def refused_for_data(error: Exception) -> bool:
    """Whether the database refused what was sent (it would refuse it again), not for its
    availability: a data error, or sqlite3's ``OverflowError`` (an integer past 64 bits).
    A constraint violation is not one (a conflict of seqs: the caller's to handle).

    Example:
        >>> refused_for_data(OverflowError("Python int too large to convert to SQLite INTEGER"))
        True
        >>> from sqlalchemy.exc import OperationalError
        >>> refused_for_data(OperationalError("x", {}, Exception("database is locked")))
        False
    """
    if isinstance(error, OverflowError):
        return True
    return isinstance(error, DBAPIError) and not isinstance(error, IntegrityError) and not is_transient(error)


def error_text(exc: BaseException, limit: int = 300) -> str:
    """The first line of what the database (or the code) said, and the error's class: for a
    failure that is not about a value sent (a migration's statement), where
    :func:`describe_error` would name the class only.

    Example:
        >>> from sqlalchemy.exc import OperationalError
        >>> error_text(OperationalError("ALTER TABLE runs ADD COLUMN job_id", {},
        ...                             Exception("duplicate column name: job_id")))
        'duplicate column name: job_id (OperationalError)'
    """
    cause = exc.orig if isinstance(exc, DBAPIError) else exc
    first = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
    if first.startswith("<class "):  # asyncpg through SQLAlchemy's adapter: "<class 'x'>: msg"
        first = first.split(">: ", 1)[-1]
    return f"{first[:limit]} ({type(exc).__name__})" if first else type(exc).__name__


def unwrap_error(exc: BaseException) -> BaseException:
    """The error under a wrapper that says nothing of its own: Procrastinate's
    ``ConnectorException`` ("Database error.", raised from the driver's error) is its cause.

    Example:
        >>> from procrastinate.exceptions import ConnectorException
        >>> try:
        ...     try:
        ...         raise TimeoutError("couldn't get a connection after 30.00 sec")
        ...     except TimeoutError as cause:
        ...         raise ConnectorException() from cause
        ... except ConnectorException as e:
        ...     unwrap_error(e)
        TimeoutError("couldn't get a connection after 30.00 sec")
    """
    while (type(exc).__module__.startswith("procrastinate.") and type(exc).__name__ == "ConnectorException"
           and exc.__cause__ is not None):
        exc = exc.__cause__
    return exc


def describe_error(exc: BaseException) -> str:
    """What went wrong, in one line, **without the SQL statement or its parameters**
    (SQLAlchemy's own message has both: it may hold agent output or a secret). A wrapper
    that says nothing is described by what it wraps (:func:`unwrap_error`).

    Example:
        >>> from sqlalchemy.exc import OperationalError
        >>> describe_error(OperationalError("INSERT INTO t VALUES (?)", ("secret",),
        ...                                 Exception("database is locked")))
        'database is locked (OperationalError)'
    """
    exc = unwrap_error(exc)
    if isinstance(exc, DBAPIError):
        if not is_transient(exc) or is_data_error(exc):
            # A data error's message may quote the value it refused: name it only.
            return f"the database refused the write ({type(exc).__name__}: {type(exc.orig).__name__})"
        return error_text(exc, 200)
    if isinstance(exc, SQLAlchemyError):
        return f"database error ({type(exc).__name__})"
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"{text} ({type(exc).__name__})" if text else type(exc).__name__


class MigrationError(Exception):
    """Upgrading the database's schema failed: which migration and why (the database is
    left as it was: the migrations run in one transaction)."""


class SchemaTooNewError(Exception):
    """The database's schema is newer than this version's migrations (a newer
    cursor-agent-api upgraded it); nothing was changed."""


class SchemaInUseError(Exception):
    """A migration is due but other processes of an older version use the database (workers
    sending heartbeats, API servers listening): upgrading the schema under them would make
    their writes fail (their runs stuck). Nothing was changed; stop them first
    (``docs/distributed.md``, "Upgrading a cluster")."""


def is_database_failure(error: BaseException) -> bool:
    """Whether ``error`` is the database's (a driver's or its pool's, SQLAlchemy's report of
    one, the store's; a connection refused, lost or timed out), not a bug: SQLAlchemy's errors
    of its own (a bad argument, a statement that does not compile: ``ArgumentError``,
    ``InvalidRequestError``, …) are the program's. (The server's start-up names the step
    such a failure stopped: ``server/app.py``'s ``start_step``.)

    Example:
        >>> is_database_failure(ConnectionRefusedError(111, "Connect call failed"))
        True
        >>> from sqlalchemy.exc import ArgumentError, OperationalError
        >>> lost = OperationalError("SELECT 1", {}, Exception("gone"))
        >>> is_database_failure(lost), is_database_failure(ArgumentError("a bug"))
        (True, False)
        >>> is_database_failure(TypeError("a bug"))
        False
    """
    cause = unwrap_error(error)
    if isinstance(cause, (DBAPIError, StoreUnavailableError, MigrationError, SchemaTooNewError,
                          SchemaInUseError)):
        return True
    return (is_transient(cause) or isinstance(cause, driver_errors())
            or type(cause).__module__.startswith(("psycopg", "asyncpg")))


def answers_later(error: BaseException) -> bool:
    """Whether ``error``, opening or using the database, says it did not answer, for now
    (refused or lost connections, a timeout, too many connections, a shutdown: trying again
    later may work), not that it answered "no" for a lasting reason (a wrong password or
    user, a database that does not exist, a schema too new or in use, a failed migration:
    trying again fails the same way until someone changes something).

    Example:
        >>> answers_later(ConnectionRefusedError(111, "Connect call failed"))
        True
        >>> class Refused(Exception):
        ...     sqlstate = "28P01"  # invalid_password
        >>> answers_later(DBAPIError(None, None, Refused("password authentication failed")))
        False
        >>> answers_later(SchemaTooNewError("the database was upgraded by a newer ..."))
        False
        >>> answers_later(ConnectionError('PostgreSQL server at "db:5432" rejected SSL upgrade'))
        False
    """
    cause = unwrap_error(error)
    if isinstance(cause, ConnectionError) and "rejected SSL upgrade" in str(cause):
        return False  # TLS asked for (sslmode=require) of a server without it: lasting
    if isinstance(cause, DBAPIError):
        code = _sqlstate(cause)
        if code is not None:  # what PostgreSQL said, connecting or not
            return code.startswith(_PG_TRANSIENT)
    return is_transient(cause)
