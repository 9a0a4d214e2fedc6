"""The durable store: every SQL statement of the server, in small modules named for what
they hold. The rest of the server calls :class:`Store`'s methods with plain values and gets
plain data back; nothing outside this package (and the schema: ``models.py``, the
migrations) imports SQLAlchemy (``tests/server/test_sql_owner.py`` checks it).

* :mod:`.engine`: the engine, its life, the migrations, transactions and snapshots;
* :mod:`.writes`: the write path (records and the folded turn state, one transaction);
* :mod:`.log_reads`: reading a chat's log; :mod:`.turn_state`: reading the folded state;
* :mod:`.chats`, :mod:`.runs`: their rows (:mod:`.run_order`: a chat's runs a page at a time;
  :mod:`.chat_deletes`: a chat deleted with all of it);
  :mod:`.claims`: the distributed queue's;
  :mod:`.auth_sessions`: the browser sessions'; :mod:`.notifications`: NOTIFY and LISTEN
  (database URLs: :mod:`cursor_agent_api.database_urls`, outside the server, for the CLI too);
* :mod:`.records`, :mod:`.cuts`, :mod:`.encoding`, :mod:`.keys`, :mod:`.ids`: the values
  the store takes and gives; :mod:`.errors`, :mod:`.health`, :mod:`.memory`: what can go
  wrong, whether writes succeed, big values' memory.

What does not live here: broadcasting (:mod:`..hub`), process handling (:mod:`..runs`),
folding (:mod:`..turns`: the store applies the changes it is given, and imports neither the
fold nor the page's views). Nothing here parses an agent line; the records carry what the
client produced.

Example:
    >>> import asyncio, tempfile, os
    >>> async def demo() -> list[int]:
    ...     d = tempfile.mkdtemp()
    ...     store = Store(f"sqlite+aiosqlite:///{d}/db.sqlite3")
    ...     await store.start()
    ...     chat = await store.create_chat(workspace=d, model=None, options={}, title="t")
    ...     recs = await store.append(chat["id"], [NewRecord("server", "note", None, {})] * 2)
    ...     await store.close()
    ...     return [r.seq for r in recs]
    >>> asyncio.run(demo())
    [1, 2]
"""

from __future__ import annotations

from .auth_sessions import AuthSessions
from .chat_deletes import ChatDeletes
from .chats import ChatRows
from .claims import QueueRows
from .cuts import cut_record, cut_value, resolve_pointer, utf8_prefix, utf8_size
from .encoding import json_bytes
from .engine import MIGRATIONS_DIR, SQLITE_PAGE_SIZE, StoreEngine, run_migrations
from .errors import (
    ActiveRunError,
    DatabaseError,
    MigrationError,
    NotFoundError,
    RunEndedError,
    SchemaTooNewError,
    StoreUnavailableError,
    describe_error,
    is_transient,
)
from .health import StoreFaults, StoreHealth
from .ids import new_id, now_ms
from .log_reads import LogReads
from .memory import BIG_VALUE, release_memory, tune_memory
from .notifications import Notifications
from .records import (
    EventRecord,
    NewRecord,
    Stamp,
    Stamps,
    agent_derived,
    agent_payload,
    unstorable_record,
)
from .runs import RunRows
from .turn_state import TurnReads
from .writes import (
    AppendOnce,
    ExtraWrites,
    LogWrites,
    PlannedWrites,
    TurnBatch,
    replace_turn,
    turn_writes,
    write_turn,
)


class Store(ChatRows, ChatDeletes, RunRows, LogReads, TurnReads, QueueRows, AuthSessions, Notifications):
    """Async access to the server's database (an SQLite file or PostgreSQL).

    Call :meth:`start` once (creates the SQLite directory, sets WAL, runs the
    migrations) and :meth:`close` at the end. Each part lives in its module (see the
    package's text): :class:`~.engine.StoreEngine`, :class:`~.writes.LogWrites`,
    :class:`~.log_reads.LogReads`, :class:`~.turn_state.TurnReads`,
    :class:`~.chats.ChatRows`, :class:`~.chat_deletes.ChatDeletes`, :class:`~.runs.RunRows`,
    :class:`~.claims.QueueRows`,
    :class:`~.auth_sessions.AuthSessions`, :class:`~.notifications.Notifications`.

    Example:
        >>> Store("sqlite+aiosqlite:////tmp/x.sqlite3").dialect
        'sqlite'
    """


__all__ = [
    "BIG_VALUE",
    "MIGRATIONS_DIR",
    "SQLITE_PAGE_SIZE",
    "ActiveRunError",
    "AppendOnce",
    "DatabaseError",
    "EventRecord",
    "ExtraWrites",
    "LogWrites",
    "MigrationError",
    "NewRecord",
    "NotFoundError",
    "PlannedWrites",
    "RunEndedError",
    "SchemaTooNewError",
    "Stamp",
    "Stamps",
    "Store",
    "StoreEngine",
    "StoreFaults",
    "StoreHealth",
    "StoreUnavailableError",
    "TurnBatch",
    "agent_derived",
    "agent_payload",
    "cut_record",
    "cut_value",
    "describe_error",
    "is_transient",
    "json_bytes",
    "new_id",
    "now_ms",
    "release_memory",
    "replace_turn",
    "resolve_pointer",
    "run_migrations",
    "tune_memory",
    "turn_writes",
    "unstorable_record",
    "utf8_prefix",
    "utf8_size",
    "write_turn",
]
