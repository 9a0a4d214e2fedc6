"""The durable store: chats, runs, the per-chat event log and tool calls (SQLAlchemy async).

:class:`Store` is the only module that writes SQL. Its central promise is
:meth:`Store.append`: in **one transaction** it bumps ``chats.last_seq`` by the
number of new records (an ``UPDATE … RETURNING``, which locks the chat's row
on PostgreSQL and takes SQLite's write lock), inserts the records with the
seqs that follow, and runs the caller's extra writes (tool calls, run fields).
Either all of it is committed or none of it is; seqs are per chat, strictly
increasing and without gaps.

What does not live here: broadcasting (:mod:`.hub`), process handling
(:mod:`.runs`). Nothing here parses an agent line; the records carry what the
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

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Row, and_, event, func, insert, select, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from .models import ACTIVE_STATUSES, chats, events, runs, tool_calls
from .webui import TOOL_RECORD_TYPES, tool_call_view

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def now_ms() -> int:
    """Milliseconds since the epoch (the server's timestamps).

    Example:
        >>> now_ms() > 1_700_000_000_000
        True
    """
    return time.time_ns() // 1_000_000


def new_id() -> str:
    """A new random id for a chat or a run (a UUID4 string).

    Example:
        >>> len(new_id())
        36
    """
    return str(uuid.uuid4())


class ActiveRunError(Exception):
    """The chat already has a queued or running run (one run at a time per chat).

    Example:
        >>> str(ActiveRunError("r1"))
        'r1'
    """


class NotFoundError(Exception):
    """A chat or run id that the store does not know.

    Example:
        >>> isinstance(NotFoundError("chat x"), Exception)
        True
    """


@dataclass(slots=True)
class NewRecord:
    """A record to append to a chat's log; :meth:`Store.append` gives it its seq.

    ``source`` is ``"agent"`` (an event the client yielded: ``payload`` is
    ``event.to_dict()``, ``raw`` the original line) or ``"server"`` (a run's
    life-cycle: ``type`` ``"run"``, ``subtype`` its new status).

    Example:
        >>> NewRecord("server", "run", "queued", {"run_id": "r"}).raw is None
        True
    """

    source: str
    type: str
    subtype: str | None
    payload: dict[str, Any]
    raw: str | None = None
    run_id: str | None = None


@dataclass(slots=True)
class EventRecord:
    """One stored record of a chat's log, with its seq.

    Example:
        >>> r = EventRecord(1, "c", None, 0, "server", "run", "queued", {}, None)
        >>> r.to_dict()["seq"], "raw" in r.to_dict()
        (1, False)
    """

    seq: int
    chat_id: str
    run_id: str | None
    ts_ms: int
    source: str
    type: str
    subtype: str | None
    payload: dict[str, Any]
    raw: str | None

    def to_dict(self, include_raw: bool = False) -> dict[str, Any]:
        """The JSON form used by REST and WebSocket (``raw`` only when asked).

        Tool-call records also carry ``tool_call``: the card fields the protocol
        layer reads from the payload (:func:`.webui.tool_call_view`).
        """
        d: dict[str, Any] = {
            "seq": self.seq,
            "chat_id": self.chat_id,
            "run_id": self.run_id,
            "ts_ms": self.ts_ms,
            "source": self.source,
            "type": self.type,
            "subtype": self.subtype,
            "payload": self.payload,
        }
        if self.type in TOOL_RECORD_TYPES:
            # The card fields the web UI shows (see webui.tool_call_view); not stored.
            d["tool_call"] = tool_call_view(self.payload)
        if self.type in TOOL_RECORD_TYPES:
            d["tool_call"] = tool_call_view(self.payload)
        if include_raw:
            d["raw"] = self.raw
        return d

    @classmethod
    def from_row(cls, row: Any) -> EventRecord:
        """Build from a row (``Row``) of the ``events`` table."""
        m = row._mapping
        return cls(
            m["seq"],
            m["chat_id"],
            m["run_id"],
            m["ts_ms"],
            m["source"],
            m["type"],
            m["subtype"],
            m["payload"],
            m["raw"],
        )


ExtraWrites = Callable[[AsyncConnection, list[EventRecord]], Awaitable[None]]


def _json_dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def _row_dict(row: Row[Any] | None) -> dict[str, Any] | None:
    return dict(row._mapping) if row is not None else None


def run_migrations(sync_connection: Any) -> None:
    """Upgrade the database on ``sync_connection`` to the newest schema (Alembic ``head``).

    Example:
        >>> callable(run_migrations)
        True
    """
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["connection"] = sync_connection
    command.upgrade(cfg, "head")


class Store:
    """Async access to the server's database (an SQLite file or PostgreSQL).

    Call :meth:`start` once (creates the SQLite directory, sets WAL, runs the
    migrations) and :meth:`close` at the end.

    Example:
        >>> Store("sqlite+aiosqlite:////tmp/x.sqlite3").dialect
        'sqlite'
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.dialect = make_url(url).get_backend_name()
        self._engine: AsyncEngine | None = None
        # SQLite has one writer at a time: serialize our writes in-process instead
        # of letting connections fight over the lock (no SQLITE_BUSY, FIFO order).
        self._write_lock: asyncio.Lock | None = asyncio.Lock() if self.is_sqlite else None

    @property
    def is_sqlite(self) -> bool:
        """True when the database is an SQLite file."""
        return self.dialect == "sqlite"

    @property
    def engine(self) -> AsyncEngine:
        """The SQLAlchemy engine (after :meth:`start`)."""
        if self._engine is None:
            raise RuntimeError("Store.start() was not called")
        return self._engine

    async def start(self) -> None:
        """Open the engine and bring the schema up to date."""
        url = make_url(self.url)
        kwargs: dict[str, Any] = {
            "json_serializer": _json_dumps,
            "json_deserializer": orjson.loads,
        }
        if self.is_sqlite:
            db = url.database
            if db and db != ":memory:":
                Path(db).expanduser().parent.mkdir(parents=True, exist_ok=True)
            kwargs["connect_args"] = {"timeout": 30}
        else:
            kwargs["pool_size"] = 10
            kwargs["max_overflow"] = 20
            kwargs["pool_pre_ping"] = True
        engine = create_async_engine(url, **kwargs)
        if self.is_sqlite:

            @event.listens_for(engine.sync_engine, "connect")
            def _pragmas(dbapi_connection: Any, _record: Any) -> None:
                cur = dbapi_connection.cursor()
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute("PRAGMA synchronous=NORMAL")
                cur.execute("PRAGMA foreign_keys=ON")
                cur.execute("PRAGMA busy_timeout=30000")
                cur.close()

        self._engine = engine
        async with self._writing(), engine.begin() as conn:
            await conn.run_sync(run_migrations)

    async def close(self) -> None:
        """Dispose of the engine's connections."""
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None

    @contextlib.asynccontextmanager
    async def _writing(self) -> AsyncIterator[None]:
        if self._write_lock is None:
            yield
            return
        async with self._write_lock:
            yield

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection]:
        """A write transaction (serialized with the others on SQLite)."""
        async with self._writing(), self.engine.begin() as conn:
            yield conn

    def _clean_text(self, value: str | None) -> str | None:
        # PostgreSQL text cannot hold NUL; keep everything else intact.
        if value is not None and not self.is_sqlite and "\x00" in value:
            return value.replace("\x00", "\ufffd")
        return value

    # ---- chats -------------------------------------------------------------------------

    async def create_chat(
        self, *, workspace: str, model: str | None, options: dict[str, Any], title: str
    ) -> dict[str, Any]:
        """Insert a chat; returns it as a dict."""
        ts = now_ms()
        row = {
            "id": new_id(),
            "session_id": None,
            "workspace": workspace,
            "model": model,
            "options": options,
            "title": title,
            "created_ms": ts,
            "updated_ms": ts,
            "last_seq": 0,
        }
        async with self.transaction() as conn:
            await conn.execute(insert(chats).values(**row))
        return row

    async def get_chat(self, chat_id: str) -> dict[str, Any] | None:
        """The chat, or ``None``."""
        async with self.engine.connect() as conn:
            res = await conn.execute(select(chats).where(chats.c.id == chat_id))
            return _row_dict(res.first())

    async def update_chat(self, chat_id: str, *, idle_only: bool = False, **values: Any) -> dict[str, Any]:
        """Change a chat's fields (``title``, ``session_id``, ``options``); returns the chat.

        With ``idle_only``, raises :class:`ActiveRunError` (changing nothing) when the chat
        has a queued or running run; the check and the change are one transaction.
        """
        async with self.transaction() as conn:
            if idle_only:
                active = await conn.execute(
                    select(runs.c.id)
                    .where(runs.c.chat_id == chat_id, runs.c.status.in_(("queued", "running")))
                    .limit(1)
                )
                if active.first() is not None:
                    raise ActiveRunError(f"chat {chat_id} has an active run")
            res = await conn.execute(
                update(chats)
                .where(chats.c.id == chat_id)
                .values(**values, updated_ms=now_ms())
                .returning(*chats.c)
            )
            row = res.first()
        if row is None:
            raise NotFoundError(f"no chat {chat_id}")
        return dict(row._mapping)

    async def list_chats(self, *, limit: int = 100, offset: int = 0) -> list[dict[str, Any]]:
        """Chats, most recently active first, each with its latest run's status."""
        latest = (
            select(runs.c.status)
            .where(runs.c.chat_id == chats.c.id)
            .order_by(runs.c.created_ms.desc(), runs.c.id.desc())
            .limit(1)
            .scalar_subquery()
        )
        q = (
            select(chats, latest.label("status"))
            .order_by(chats.c.updated_ms.desc(), chats.c.id)
            .limit(limit)
            .offset(offset)
        )
        async with self.engine.connect() as conn:
            res = await conn.execute(q)
            return [dict(r._mapping) for r in res]

    # ---- runs --------------------------------------------------------------------------

    async def create_run(
        self,
        chat_id: str,
        prompt: str,
        record: Callable[[dict[str, Any]], NewRecord],
        *,
        server_id: str | None = None,
    ) -> tuple[dict[str, Any], EventRecord]:
        """Insert a queued run and its ``run/queued`` record in one transaction.

        ``server_id`` names the server process that owns the run. Raises
        :class:`ActiveRunError` when the chat already has an active run.
        """
        run_id = new_id()
        run: dict[str, Any] = {
            "id": run_id,
            "chat_id": chat_id,
            "prompt": prompt,
            "status": "queued",
            "server_id": server_id,
            "created_ms": now_ms(),
        }

        async def insert_run(conn: AsyncConnection, _recs: list[EventRecord]) -> None:
            await conn.execute(insert(runs).values(**run))

        new = record(run)
        new.run_id = run_id
        try:
            recs = await self.append(chat_id, [new], before=insert_run)
        except IntegrityError as e:
            raise ActiveRunError(f"chat {chat_id} already has an active run") from e
        full = await self.get_run(run_id)
        assert full is not None
        return full, recs[0]

    async def get_run(self, run_id: str) -> dict[str, Any] | None:
        """The run, or ``None``."""
        async with self.engine.connect() as conn:
            res = await conn.execute(select(runs).where(runs.c.id == run_id))
            return _row_dict(res.first())

    async def list_runs(self, chat_id: str) -> list[dict[str, Any]]:
        """The chat's runs, oldest first."""
        async with self.engine.connect() as conn:
            res = await conn.execute(
                select(runs).where(runs.c.chat_id == chat_id).order_by(runs.c.created_ms, runs.c.id)
            )
            return [dict(r._mapping) for r in res]

    async def active_runs(self) -> list[dict[str, Any]]:
        """Runs still marked queued or running."""
        async with self.engine.connect() as conn:
            res = await conn.execute(
                select(runs).where(runs.c.status.in_(ACTIVE_STATUSES)).order_by(runs.c.created_ms)
            )
            return [dict(r._mapping) for r in res]

    async def set_run(self, conn: AsyncConnection, run_id: str, **values: Any) -> None:
        """Inside a transaction: change a run's fields (texts made storable)."""
        clean = {k: self._clean_text(v) if isinstance(v, str) else v for k, v in values.items()}
        await conn.execute(update(runs).where(runs.c.id == run_id).values(**clean))

    async def update_run(self, run_id: str, **values: Any) -> None:
        """Change a run's fields in a transaction of its own."""
        async with self.transaction() as conn:
            await self.set_run(conn, run_id, **values)

    # ---- the event log -----------------------------------------------------------------

    async def append(
        self,
        chat_id: str,
        new: Sequence[NewRecord],
        *,
        before: ExtraWrites | None = None,
        after: ExtraWrites | None = None,
    ) -> list[EventRecord]:
        """Give ``new`` the chat's next seqs and commit them, with ``before``/``after`` writes.

        ``before`` runs after the seqs are allocated and before the insert
        (e.g. to insert the run the records point to); ``after`` runs after the
        insert. All in one transaction. Raises :class:`NotFoundError` for an
        unknown chat.
        """
        n = len(new)
        ts = now_ms()
        async with self.transaction() as conn:
            res = await conn.execute(
                update(chats)
                .where(chats.c.id == chat_id)
                .values(last_seq=chats.c.last_seq + n, updated_ms=ts)
                .returning(chats.c.last_seq)
            )
            last = res.scalar_one_or_none()
            if last is None:
                raise NotFoundError(f"no chat {chat_id}")
            first = last - n + 1
            recs = [
                EventRecord(
                    first + i,
                    chat_id,
                    r.run_id,
                    ts,
                    r.source,
                    r.type,
                    r.subtype,
                    r.payload,
                    self._clean_text(r.raw),
                )
                for i, r in enumerate(new)
            ]
            if before is not None:
                await before(conn, recs)
            if recs:
                await conn.execute(
                    insert(events),
                    [
                        {
                            "chat_id": chat_id,
                            "run_id": r.run_id,
                            "seq": r.seq,
                            "ts_ms": ts,
                            "source": r.source,
                            "type": r.type,
                            "subtype": r.subtype,
                            "payload": r.payload,
                            "raw": r.raw,
                        }
                        for r in recs
                    ],
                )
            if after is not None:
                await after(conn, recs)
        return recs

    async def events_after(
        self, chat_id: str, after_seq: int, limit: int, *, run_id: str | None = None
    ) -> list[EventRecord]:
        """Up to ``limit`` records of the chat with ``seq > after_seq``, in order."""
        cond = and_(events.c.chat_id == chat_id, events.c.seq > after_seq)
        if run_id is not None:
            cond = and_(cond, events.c.run_id == run_id)
        q = (
            select(
                events.c.seq,
                events.c.chat_id,
                events.c.run_id,
                events.c.ts_ms,
                events.c.source,
                events.c.type,
                events.c.subtype,
                events.c.payload,
                events.c.raw,
            )
            .where(cond)
            .order_by(events.c.seq)
            .limit(limit)
        )
        async with self.engine.connect() as conn:
            res = await conn.execute(q)
            return [EventRecord.from_row(r) for r in res]

    async def count_events(self, chat_id: str) -> int:
        """How many records the chat's log holds."""
        async with self.engine.connect() as conn:
            res = await conn.execute(
                select(func.count()).select_from(events).where(events.c.chat_id == chat_id)
            )
            return int(res.scalar_one())

    # ---- tool calls --------------------------------------------------------------------

    async def upsert_tool_call(self, conn: AsyncConnection, row: dict[str, Any]) -> None:
        """Inside a transaction: insert a tool call or update it (key: run, call_id)."""
        from sqlalchemy.dialects import postgresql, sqlite

        dialect_insert: Any = sqlite.insert if self.is_sqlite else postgresql.insert
        row = {k: self._clean_text(v) if isinstance(v, str) else v for k, v in row.items()}
        row["output"] = row["output"] or ""
        stmt = dialect_insert(tool_calls).values(**row)
        ex = stmt.excluded
        changes = {
            k: getattr(ex, k)
            for k in row
            if k not in ("chat_id", "run_id", "call_id", "started_seq", "started_ms")
        }
        changes["started_seq"] = func.coalesce(tool_calls.c.started_seq, ex.started_seq)
        changes["started_ms"] = func.coalesce(tool_calls.c.started_ms, ex.started_ms)
        await conn.execute(stmt.on_conflict_do_update(index_elements=["run_id", "call_id"], set_=changes))

    async def abandon_tool_calls(self, conn: AsyncConnection, run_id: str) -> None:
        """Inside a transaction: calls of a finished run still ``running`` become ``abandoned``."""
        await conn.execute(
            update(tool_calls)
            .where(and_(tool_calls.c.run_id == run_id, tool_calls.c.status == "running"))
            .values(
                status="abandoned",
                output="abandoned: the turn ended before the tool call completed",
            )
        )

    async def list_tool_calls(self, chat_id: str, run_id: str | None = None) -> list[dict[str, Any]]:
        """Tool calls of a chat (or of one of its runs), in the order they started."""
        cond = tool_calls.c.chat_id == chat_id
        if run_id is not None:
            cond = and_(cond, tool_calls.c.run_id == run_id)
        q = (
            select(tool_calls)
            .where(cond)
            .order_by(func.coalesce(tool_calls.c.started_seq, tool_calls.c.completed_seq), tool_calls.c.id)
        )
        async with self.engine.connect() as conn:
            res = await conn.execute(q)
            return [dict(r._mapping) for r in res]
