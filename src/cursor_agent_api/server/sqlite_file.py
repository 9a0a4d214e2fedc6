"""The server's SQLite file, made private before SQLite opens it.

SQLite creates a missing database file with the process's umask (``0644`` as a
rule: readable by every local user), and its ``-wal`` and ``-shm`` files with the
database file's mode. The file holds every prompt, every agent event and the
sign-in sessions, so :func:`prepare_sqlite_file` creates it first, ``0600``, in a
directory of its own made ``0700``. A directory or a file that exists already
keeps its mode: its owner chose it.

Example:
    >>> import stat, tempfile
    >>> db = Path(tempfile.mkdtemp()) / "new" / "server.sqlite3"
    >>> prepare_sqlite_file(str(db))
    >>> oct(stat.S_IMODE(db.stat().st_mode)), oct(stat.S_IMODE(db.parent.stat().st_mode))
    ('0o600', '0o700')
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

FILE_MODE = 0o600
DIRECTORY_MODE = 0o700


def prepare_sqlite_file(database: str) -> None:
    """Create ``database`` (a path) empty and private, and its missing directory private.

    An empty file is a valid SQLite database. Nothing is done for ``:memory:``, an
    empty name (SQLite's private temporary database) or a ``file:`` URI (SQLite reads
    its options, ``mode=`` among them, from the URI).
    """
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    path = Path(database).expanduser()
    path.parent.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        path.parent.mkdir(mode=DIRECTORY_MODE)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
