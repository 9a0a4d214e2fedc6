"""Giving a SQLite file's free pages back to the file system (``cursor-agent-api compact``).

Deleting rows (``DELETE /api/chats/{id}``) frees pages inside the file; SQLite reuses them
for new rows, but the file keeps its size (``auto_vacuum`` is off). :func:`compact_sqlite`
runs ``VACUUM`` (the file rewritten without its free pages) and then a checkpoint that
truncates the WAL. ``VACUUM`` holds the write lock for as long as it takes (about as long
as copying the file): run it while the server is stopped. A server that runs meanwhile is
not harmed — its writes wait (up to its busy timeout, 30 s by default) — but a long
``VACUUM`` makes them fail for that while.

PostgreSQL needs nothing of this: autovacuum marks the deleted rows' space reusable (the
tables stop growing; they do not shrink), ``VACUUM FULL`` by hand gives it back (and locks
each table while it rewrites it).

Example:
    >>> import sqlite3, tempfile
    >>> path = f"{tempfile.mkdtemp()}/db.sqlite3"
    >>> db = sqlite3.connect(path)
    >>> _ = db.execute("CREATE TABLE t (x BLOB)")
    >>> _ = db.execute("INSERT INTO t VALUES (zeroblob(1000000))"); db.commit()
    >>> _ = db.execute("DELETE FROM t"); db.commit(); db.close()
    >>> done = compact_sqlite(path)
    >>> done.before > 1_000_000 > done.after, done.free_pages > 0
    (True, True)
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass

BUSY_TIMEOUT = 5.0
"""Seconds ``compact`` waits for another process's write lock before it gives up."""


class DatabaseBusyError(Exception):
    """Another process held the database's write lock for :data:`BUSY_TIMEOUT` s."""


@dataclass(frozen=True)
class Compacted:
    """Sizes in bytes of the database's files (the file, its ``-wal``) before and after, and
    the free pages there were."""

    before: int
    after: int
    free_pages: int


def _size(path: str) -> int:
    return sum(os.path.getsize(p) for p in (path, f"{path}-wal") if os.path.exists(p))


def compact_sqlite(path: str) -> Compacted:
    """``VACUUM`` the SQLite file at ``path``, then truncate its WAL (see the module doc).

    Raises :class:`DatabaseBusyError` when another process holds the write lock,
    :class:`FileNotFoundError` when there is no such file (none is created).
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(path)
    before = _size(path)
    db = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None)
    try:
        (free,) = db.execute("PRAGMA freelist_count").fetchone()
        try:
            db.execute("VACUUM")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.OperationalError as e:
            if "locked" in str(e) or "busy" in str(e):
                raise DatabaseBusyError(str(e)) from None
            raise
    finally:
        db.close()
    return Compacted(before, _size(path), int(free))
