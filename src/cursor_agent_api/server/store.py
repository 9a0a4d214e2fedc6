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
import logging
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, overload

import orjson
from sqlalchemy import (
    LargeBinary,
    Row,
    String,
    Text,
    and_,
    case,
    cast,
    event,
    func,
    insert,
    literal,
    null,
    select,
    text,
    type_coerce,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import (
    DBAPIError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    PendingRollbackError,
    SQLAlchemyError,
)
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from ..protocol.events import AgentEvent, classify
from .models import ACTIVE_STATUSES, chats, events, runs, tool_calls
from .sqlite_file import prepare_sqlite_file

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
SQLITE_PAGE_SIZE = 16384
"""The page size of a new SQLite database (``PRAGMA page_size``)."""
BIG_VALUE = 1024 * 1024
"""A record over this many bytes is written, or read whole, one at a time (memory)."""
logger = logging.getLogger("cursor_agent_api.server")


def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim  # noqa: B018 - glibc only (musl has none)
        libc.mallopt  # noqa: B018
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _libc()
_M_MMAP_THRESHOLD = -3


def tune_memory() -> None:
    """Make glibc give every block over :data:`BIG_VALUE` its own mapping, returned to the OS
    as soon as it is freed (by default the threshold grows with the blocks freed, and freed
    blocks of tens of MB stay in the process). Called once by the server. A no-op elsewhere.

    Example:
        >>> tune_memory()
    """
    if _LIBC is not None:
        _LIBC.mallopt(_M_MMAP_THRESHOLD, BIG_VALUE)


def release_memory() -> None:
    """Give the memory freed after a big value back to the OS (glibc's ``malloc_trim``).

    Hand-written because no library does this: glibc keeps freed blocks in its arenas (the
    process's RSS stays at its peak); trimming after each value over :data:`BIG_VALUE`
    keeps the RSS near what is really in use. A no-op elsewhere.

    Example:
        >>> release_memory()
    """
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


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


class _RecordRefusedError(Exception):
    """Record ``index`` of a batch written one by one was refused for its data."""

    def __init__(self, index: int, error: DBAPIError) -> None:
        super().__init__(index)
        self.index = index
        self.error = error


class ActiveRunError(Exception):
    """The chat already has a queued or running run (one run at a time per chat).

    Example:
        >>> str(ActiveRunError("r1"))
        'r1'
    """


class NotFoundError(Exception):
    """A chat or run id that the store does not know."""


def _chat_key(chat_id: str) -> Any:
    """The chat's ``num`` (its key in ``events``), as a scalar subquery."""
    return select(chats.c.num).where(chats.c.id == chat_id).scalar_subquery()


def _run_key(run_id: str) -> Any:
    """The run's ``num`` (its key in ``events``), as a scalar subquery."""
    return select(runs.c.num).where(runs.c.id == run_id).scalar_subquery()


def _next_num(table: Any, is_sqlite: bool) -> Any:
    """A new ``num`` for a row of ``chats`` or ``runs``: PostgreSQL's sequence (migration
    0006); on SQLite, whose writes are serialized, one more than the largest."""
    if is_sqlite:
        return select(func.coalesce(func.max(table.c.num), 0) + 1).scalar_subquery()
    return func.nextval(f"{table.name}_num_seq")


_SERVER_SOURCE = text("events.source = 'server'")
"""The condition of the partial index ``ix_events_server_runs`` (a literal: SQLite uses a
partial index only for the very term it was made with)."""

_EVENTS_RUNS = events.outerjoin(runs, runs.c.num == events.c.run_key)
"""``events`` with each record's run (its public id)."""


def _key_columns(chat_id: str) -> tuple[Any, ...]:
    """A record's columns before ``payload`` and ``raw`` (which each read selects its own
    way), from :data:`_EVENTS_RUNS`: the ids are the public ones."""
    return (
        events.c.seq,
        literal(chat_id, String).label("chat_id"),
        runs.c.id.label("run_id"),
        events.c.ts_ms,
        events.c.source,
        events.c.type,
        events.c.subtype,
    )


def _events_where(chat_id: str, run_id: str | None) -> Any:
    cond = events.c.chat_key == _chat_key(chat_id)
    if run_id is not None:
        cond = and_(cond, events.c.run_key == _run_key(run_id))
    return cond

class StoreUnavailableError(Exception):
    """The database cannot be written for now (an injected fault, or the store gave up).

    Example:
        >>> is_transient(StoreUnavailableError("injected"))
        True
    """


_SQLITE_TRANSIENT = ("locked", "busy", "readonly", "read-only", "disk i/o", "unable to open", "full")


def is_transient(exc: BaseException) -> bool:
    """True for a failure that may go away by itself: a lock, a read-only or full disk,
    a dropped connection. Data errors and constraint violations are not transient.

    Example:
        >>> from sqlalchemy.exc import OperationalError, IntegrityError
        >>> is_transient(OperationalError("x", {}, Exception("database is locked")))
        True
        >>> is_transient(IntegrityError("x", {}, Exception("unique")))
        False
    """
    if isinstance(exc, OperationalError) and type(exc.orig).__module__.startswith("sqlite3"):
        # sqlite3 calls everything an OperationalError, "no such table" included.
        message = str(exc.orig).lower()
        return any(m in message for m in _SQLITE_TRANSIENT)
    if isinstance(exc, (StoreUnavailableError, OperationalError, InterfaceError, PoolTimeoutError)):
        return True
    if isinstance(exc, PendingRollbackError):
        return True
    if isinstance(exc, DBAPIError):
        return bool(exc.connection_invalidated) or type(exc) is DBAPIError
    return isinstance(exc, (OSError, ConnectionError, TimeoutError))


def describe_error(exc: BaseException) -> str:
    """What went wrong, in one line, **without the SQL statement or its parameters**
    (SQLAlchemy's own message has both: it may hold agent output or a secret).

    Example:
        >>> from sqlalchemy.exc import OperationalError
        >>> describe_error(OperationalError("INSERT INTO t VALUES (?)", ("secret",),
        ...                                 Exception("database is locked")))
        'database is locked (OperationalError)'
    """
    if isinstance(exc, DBAPIError):
        orig = exc.orig
        first = str(orig).strip().splitlines()[0] if str(orig).strip() else ""
        if first.startswith("<class "):  # asyncpg through SQLAlchemy's adapter: "<class 'x'>: msg"
            first = first.split(">: ", 1)[-1]
        if not is_transient(exc):
            # A data error's message may quote the value it refused: name it only.
            return f"the database refused the write ({type(exc).__name__}: {type(orig).__name__})"
        return f"{first[:200]} ({type(exc).__name__})" if first else type(exc).__name__
    if isinstance(exc, SQLAlchemyError):
        return f"database error ({type(exc).__name__})"
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"{text} ({type(exc).__name__})" if text else type(exc).__name__


class StoreFaults:
    """Fault injection for tests: make the store's writes fail as a flaky disk or network would.

    Each injected failure raises :class:`StoreUnavailableError` inside the write's
    transaction (so it is rolled back), counts as a transient failure and marks the
    store degraded, exactly like a real one.

    Example:
        >>> f = StoreFaults(); f.fail_writes(1)
        >>> f.check("events")
        Traceback (most recent call last):
        ...
        cursor_agent_api.server.store.StoreUnavailableError: injected fault: write failed
        >>> f.check("events")
    """

    def __init__(self) -> None:
        self.writes = 0
        self.until = 0.0
        self.run_ends = 0

    def fail_writes(self, n: int) -> None:
        """The next ``n`` write transactions fail."""
        self.writes = n

    def fail_for(self, seconds: float) -> None:
        """Every write fails for the next ``seconds`` seconds."""
        self.until = time.monotonic() + seconds

    def fail_run_end(self, n: int = 1) -> None:
        """The next ``n`` attempts to record the end of a run fail."""
        self.run_ends = n

    def clear(self) -> None:
        """No more injected failures."""
        self.writes = self.run_ends = 0
        self.until = 0.0

    def check(self, purpose: str) -> None:
        """Raise :class:`StoreUnavailableError` if a failure is due for a write of ``purpose``."""
        if purpose == "run_end" and self.run_ends > 0:
            self.run_ends -= 1
            raise StoreUnavailableError("injected fault: the run's end could not be written")
        if self.until and time.monotonic() < self.until:
            raise StoreUnavailableError("injected fault: the database is unavailable")
        if self.writes > 0:
            self.writes -= 1
            raise StoreUnavailableError("injected fault: write failed")


@dataclass(slots=True)
class StoreHealth:
    """Whether the last write succeeded; since when and why not (``GET /api/health``).

    Example:
        >>> h = StoreHealth(); h.failed("database is locked"); h.view()["status"]
        'degraded'
        >>> h.succeeded(); h.view()["status"], h.view()["reason"]
        ('ok', None)
    """

    degraded_since_ms: int | None = None
    reason: str | None = None
    failures: int = 0

    @property
    def degraded(self) -> bool:
        """True from a transient failure until the next write that succeeds."""
        return self.degraded_since_ms is not None

    def failed(self, reason: str) -> None:
        """Note a transient failure."""
        if self.degraded_since_ms is None:
            self.degraded_since_ms = now_ms()
        self.reason = reason
        self.failures += 1

    def succeeded(self) -> None:
        """Note a write that went through."""
        self.degraded_since_ms = None
        self.reason = None
        self.failures = 0

    def view(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "status": "degraded" if self.degraded else "ok",
            "degraded_since_ms": self.degraded_since_ms,
            "reason": self.reason,
            "failed_writes": self.failures,
        }


@dataclass(slots=True)
class NewRecord:
    """A record to append to a chat's log; :meth:`Store.append` gives it its seq.

    ``source`` is ``"agent"`` (an event the client yielded: ``payload`` is
    :func:`agent_payload`, ``raw`` the original line, as bytes or text) or
    ``"server"`` (a run's life-cycle: ``type`` ``"run"``, ``subtype`` its new status).

    Example:
        >>> NewRecord("server", "run", "queued", {"run_id": "r"}).raw is None
        True
    """

    source: str
    type: str
    subtype: str | None
    payload: dict[str, Any]
    raw: str | bytes | None = None
    run_id: str | None = None
    derived: dict[str, Any] | None = None
    """Payload fields not stored (recomputed when read), given back in the records that
    :meth:`Store.append` returns (e.g. an agent event's ``text``, already computed)."""


def agent_payload(event: Any) -> dict[str, Any]:
    """What the store keeps of an agent event: its normalized ``type`` and ``data``, the
    object as the agent wrote it (``data`` last, so that :meth:`Store.append` can see whether
    the line is exactly ``data``'s JSON). The rest of ``event.to_dict()`` (``text``,
    ``raw_type``, ``subtype``, ``session_id``, ``timestamp_ms``) is a function of ``data``:
    not stored, rebuilt when the record is read (:meth:`EventRecord.restored`), handed back
    at once by :func:`agent_derived`.

    Example:
        >>> from cursor_agent_api.protocol import parse_event
        >>> p = agent_payload(parse_event('{"type":"assistant","message":{"content":[]}}'))
        >>> list(p)
        ['type', 'data']
    """
    return {"type": event.type.value, "data": event.data}


def agent_derived(event: Any) -> dict[str, Any]:
    """The fields of ``event.to_dict()`` that :func:`agent_payload` leaves out.

    Example:
        >>> from cursor_agent_api.protocol import parse_event
        >>> sorted(agent_derived(parse_event('{"type":"user","text":"hi","session_id":"s"}')))
        ['raw_type', 'session_id', 'subtype', 'text', 'timestamp_ms']
    """
    return {
        "raw_type": event.raw_type,
        "subtype": event.subtype,
        "session_id": event.session_id,
        "timestamp_ms": event.timestamp_ms,
        "text": event.text,
    }


def _restore_text(payload: dict[str, Any]) -> dict[str, Any]:
    from ..protocol import AgentEvent

    event = AgentEvent.from_dict(payload)
    return {**agent_derived(event), **payload, "text": event.text}


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
    truncated: list[dict[str, Any]] | None = None
    size_hint: int | None = None  # at least the bytes of any one string of the payload

    def restored(self, *, raw: bool = True) -> EventRecord:
        """This record with what the store does not keep twice put back: an agent event's
        ``payload.text`` (from ``data``) and, when ``raw``, its line (``data``'s JSON, when the
        line was exactly that).

        Example:
            >>> data = {"type": "raw", "data": "hi"}
            >>> r = EventRecord(1, "c", None, 0, "agent", "raw", None, {"type": "raw", "data": data}, None)
            >>> r.restored().payload["text"], r.restored().raw
            ('hi', '{"type":"raw","data":"hi"}')
        """
        if self.source != "agent":
            return self
        payload = self.payload
        missing_text = "text" not in payload and isinstance(payload.get("data"), dict)
        missing_raw = raw and self.raw is None and isinstance(payload.get("data"), dict)
        if not (missing_text or missing_raw):
            return self
        return EventRecord(
            self.seq,
            self.chat_id,
            self.run_id,
            self.ts_ms,
            self.source,
            self.type,
            self.subtype,
            _restore_text(payload) if missing_text else payload,
            orjson.dumps(payload["data"]).decode() if missing_raw else self.raw,
            self.truncated,
            self.size_hint,
        )

    def to_dict(self, include_raw: bool = False) -> dict[str, Any]:
        """The JSON form used by REST and WebSocket (``raw`` only when asked).

        A record whose long fields were cut (:func:`cut_record`) carries ``truncated``: one
        ``{"field": <JSON pointer>, "bytes": <whole size>}`` per cut field.
        """
        if self.source == "agent" and ("text" not in self.payload or (include_raw and self.raw is None)):
            whole = self.restored(raw=include_raw)
            if whole is not self:
                return whole.to_dict(include_raw)
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
        if include_raw:
            d["raw"] = self.raw
        if self.truncated:
            cuts = self.truncated if include_raw else [t for t in self.truncated if t["field"] != "/raw"]
            if cuts:
                d["truncated"] = cuts
        return d

    @classmethod
    def from_row(cls, row: Any) -> EventRecord:
        """Build from a row (``Row``) of the ``events`` table: an agent event stored as its
        line only (``payload`` NULL) gets its payload from the line, ``{"type", "data"}``.

        Example:
            >>> from types import SimpleNamespace
            >>> row = {"seq": 1, "chat_id": "c", "run_id": None, "ts_ms": 0, "source": None,
            ...        "type": None, "subtype": None, "payload": None, "raw": b'{"type":"user"}'}
            >>> r = EventRecord.from_row(SimpleNamespace(_mapping=row))
            >>> r.source, r.type, r.payload, r.raw
            ('agent', 'user', {'type': 'user', 'data': {'type': 'user'}}, '{"type":"user"}')
        """
        m = row._mapping
        payload, raw, type_, subtype = m["payload"], m["raw"], m["type"], m["subtype"]
        if payload is None:
            payload, type_, subtype = _from_line(raw, type_, subtype)
        return cls(
            m["seq"],
            m["chat_id"],
            m["run_id"],
            m["ts_ms"],
            m["source"] or "agent",
            type_,
            subtype,
            payload,
            raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw,
        )


def _from_line(
    raw: bytes | str | None, type_: str | None, subtype: str | None
) -> tuple[dict[str, Any], str, str | None]:
    """An agent event stored as its line alone: its payload ``{"type", "data"}``, its type
    and subtype (NULL in the row: the data's, as the protocol classifies it)."""
    if raw is None:
        return {}, type_ or "raw", subtype
    data = orjson.loads(raw)
    if type_ is None:
        event = AgentEvent(classify(data), data)
        type_, subtype = event.type.value, event.subtype
    return {"type": type_, "data": data}, type_, subtype


ExtraWrites = Callable[[AsyncConnection, list[EventRecord]], Awaitable[None]]
class Stamp(NamedTuple):
    """What a planned write may read of a record: its seq and time (:data:`PlannedWrites`).

    Example:
        >>> Stamp(3, 1000).seq
        3
    """

    seq: int
    ts_ms: int


class Stamps(Sequence[Stamp]):
    """The stamps of a batch of ``n`` records: seqs from ``first``, all at ``ts_ms``; each
    made when read (a planned write reads a few of a batch's, not one per record).

    Example:
        >>> s = Stamps(5, 1000, 3)
        >>> len(s), s[0], s[-1].seq, [x.seq for x in s[1:]]
        (3, Stamp(seq=5, ts_ms=1000), 7, [6, 7])
    """

    __slots__ = ("first", "n", "ts_ms")

    def __init__(self, first: int, ts_ms: int, n: int) -> None:
        self.first, self.ts_ms, self.n = first, ts_ms, n

    def __len__(self) -> int:
        return self.n

    @overload
    def __getitem__(self, i: int) -> Stamp: ...

    @overload
    def __getitem__(self, i: slice) -> list[Stamp]: ...

    def __getitem__(self, i: int | slice) -> Stamp | list[Stamp]:
        if isinstance(i, slice):
            return [Stamp(self.first + k, self.ts_ms) for k in range(self.n)[i]]
        return Stamp(self.first + range(self.n)[i], self.ts_ms)


PlannedWrites = Callable[[Sequence[Any]], Sequence[tuple[Any, Sequence[dict[str, Any]]]]]
"""From a batch's records (or only their :class:`Stamp`: seq and time), more writes of its
transaction: ``(statement, rows)`` pairs (:meth:`Store.execute_writes`)."""


def utf8_size(text: str) -> int:
    """``len(text.encode())``, without the copy when the text is ASCII.

    Example:
        >>> utf8_size("abc"), utf8_size("é")
        (3, 2)
    """
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def utf8_prefix(text: str, limit: int) -> str:
    """The longest prefix of ``text`` of at most ``limit`` UTF-8 bytes (never half a character).

    Example:
        >>> utf8_prefix("naïve", 3)
        'na'
    """
    if len(text) <= limit // 4:
        return text
    if text.isascii():
        return text[:limit]
    return text[: limit + 1].encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")


def _pointer_token(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def cut_value(value: Any, limit: int, path: str, cuts: list[dict[str, Any]]) -> Any:
    """``value`` with every string over ``limit`` UTF-8 bytes cut to that many; each cut is
    noted in ``cuts`` as ``{"field": <JSON pointer from path>, "bytes": <whole size>}``.
    Containers are copied only where something was cut.

    Example:
        >>> cuts = []
        >>> cut_value({"a": ["xxxxxx", "ok"]}, 4, "/payload", cuts), cuts
        ({'a': ['xxxx', 'ok']}, [{'field': '/payload/a/0', 'bytes': 6}])
    """
    if isinstance(value, str):
        if len(value) * 4 <= limit:
            return value
        size = utf8_size(value)
        if size <= limit:
            return value
        cuts.append({"field": path, "bytes": size})
        return utf8_prefix(value, limit)
    if isinstance(value, dict):
        out: dict[str, Any] | None = None
        for k, v in value.items():
            new = cut_value(v, limit, f"{path}/{_pointer_token(str(k))}", cuts)
            if new is not v:
                if out is None:
                    out = dict(value)
                out[k] = new
        return value if out is None else out
    if isinstance(value, list):
        items: list[Any] | None = None
        for i, v in enumerate(value):
            new = cut_value(v, limit, f"{path}/{i}", cuts)
            if new is not v:
                if items is None:
                    items = list(value)
                items[i] = new
        return value if items is None else items
    return value


def cut_record(
    rec: EventRecord, limit: int, *, raw_size: int | None = None, include_raw: bool = False
) -> EventRecord:
    """``rec`` with its fields over ``limit`` bytes cut (``truncated`` says which and how long).

    ``raw_size`` is the whole line's length when ``rec.raw`` was already read cut;
    ``include_raw`` rebuilds (then cuts) a line stored as its data.

    Example:
        >>> r = cut_record(EventRecord(1, "c", None, 0, "agent", "assistant", None,
        ...                            {"text": "x" * 10}, "y" * 10), 4)
        >>> r.payload["text"], r.raw, [t["field"] for t in r.truncated]
        ('xxxx', 'yyyy', ['/payload/text', '/raw'])
    """
    rec = rec.restored(raw=rec.raw is not None or include_raw)
    hint = rec.size_hint
    if hint is not None and hint <= limit and (rec.raw is None or len(rec.raw) <= limit // 4):
        return rec  # nothing in it can be over the limit: no walk
    cuts: list[dict[str, Any]] = list(rec.truncated or ())
    payload = cut_value(rec.payload, limit, "/payload", cuts)
    raw = rec.raw
    if raw is not None:
        size = raw_size if raw_size is not None else utf8_size(raw) if len(raw) * 4 > limit else len(raw)
        if size > limit:
            cuts.append({"field": "/raw", "bytes": max(size, utf8_size(raw))})
            raw = utf8_prefix(raw, limit)
    if not cuts:
        return rec
    return EventRecord(
        rec.seq, rec.chat_id, rec.run_id, rec.ts_ms, rec.source, rec.type, rec.subtype, payload, raw, cuts
    )


def resolve_pointer(document: Any, pointer: str) -> Any:
    """The value at a JSON pointer (RFC 6901) in ``document``; ``KeyError`` if there is none.

    Example:
        >>> resolve_pointer({"payload": {"a/b": [0, "x"]}}, "/payload/a~1b/1")
        'x'
    """
    if pointer == "":
        return document
    if not pointer.startswith("/"):
        raise KeyError(pointer)
    node = document
    for token in pointer[1:].split("/"):
        key = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            raise KeyError(pointer)
    return node


_Prepared = tuple[NewRecord, "_Encoded | None", "bytes | None", int]
"""A record ready to insert (:meth:`Store._prepare`)."""


class _Encoded:
    """A JSON value serialized ahead of the insert (see :meth:`Store.append`): the engine's
    serializer passes its text through instead of serializing the value again."""

    __slots__ = ("text",)

    def __init__(self, text: str | bytes) -> None:
        self.text = text


def _size_hint(n: int, derived: dict[str, Any] | None) -> int:
    """At least the UTF-8 size of any string of a payload (``n`` bytes of JSON) and its
    derived fields."""
    if derived:
        for v in derived.values():
            if isinstance(v, str) and 4 * len(v) > n:
                n = 4 * len(v)
    return n


def _line_bytes(line: str | bytes) -> bytes:
    return line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")


def _appended_records(chat_id: str, first: int, ts: int, new: list[_Prepared]) -> list[EventRecord]:
    """The records of an append, as read back: seqs from ``first``, each payload whole again
    (the derived fields that are not stored given back)."""
    return [
        EventRecord(first + i, chat_id, r.run_id, ts, r.source, r.type, r.subtype,
                    {**r.payload, **r.derived} if r.derived else r.payload, _text(r.raw), None, hint)
        for i, (r, _, _, hint) in enumerate(new)
    ]


def _text(raw: str | bytes | None) -> str | None:
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw


def _json_dumps(value: Any) -> Any:
    if value.__class__ is _Encoded:
        return value.text
    return orjson.dumps(value).decode()


def _encode(value: Any) -> _Encoded | str:
    """``value`` serialized, or the reason it cannot be (a string)."""
    try:
        return _Encoded(orjson.dumps(value).decode())
    except (orjson.JSONEncodeError, TypeError, ValueError, RecursionError) as e:
        return f"{type(e).__name__}: {str(e)[:200]}"


def unstorable_record(rec: NewRecord, reason: str) -> NewRecord:
    """The record stored instead of one the database cannot take: type ``raw``, subtype
    ``unstorable``, the original line kept in ``raw``, what happened in ``payload.unstorable``.

    Example:
        >>> r = unstorable_record(NewRecord("agent", "assistant", None, {}, "{}", "r"), "too deep")
        >>> r.type, r.subtype, r.payload["unstorable"]["type"], r.raw
        ('raw', 'unstorable', 'assistant', '{}')
    """
    payload = {
        "type": "raw",
        "raw_type": None,
        "subtype": "unstorable",
        "data": {},
        "text": "",
        "session_id": None,
        "timestamp_ms": None,
        "unstorable": {"type": rec.type, "subtype": rec.subtype, "reason": reason},
    }
    return NewRecord(rec.source, "raw", "unstorable", payload, rec.raw, rec.run_id)


def _row_dict(row: Row[Any] | None) -> dict[str, Any] | None:
    return dict(row._mapping) if row is not None else None


def run_migrations(sync_connection: Any) -> None:
    """Upgrade the database on ``sync_connection`` to the newest schema (Alembic ``head``)."""
    from alembic import command
    from alembic.config import Config
    from alembic.util.exc import CommandError

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["connection"] = sync_connection
    try:
        command.upgrade(cfg, "head")
    except CommandError as exc:
        if "Can't locate revision" not in str(exc):
            raise
        raise SchemaTooNewError(
            "the database was upgraded by a newer cursor-agent-api (its schema is past this "
            f"version's last migration, {_last_migration()}): upgrade cursor-agent-api, or "
            "use another database (--database-url)") from None


class SchemaTooNewError(Exception):
    """The database's schema is newer than this version's migrations (a newer
    cursor-agent-api upgraded it); nothing was changed."""


def _last_migration() -> str:
    names = sorted(p.stem for p in (MIGRATIONS_DIR / "versions").glob("[0-9]*.py"))
    return names[-1] if names else "none"


class Store:
    """Async access to the server's database (an SQLite file or PostgreSQL).

    Call :meth:`start` once (creates the SQLite directory, sets WAL, runs the
    migrations) and :meth:`close` at the end.

    Example:
        >>> Store("sqlite+aiosqlite:////tmp/x.sqlite3").dialect
        'sqlite'
    """

    def __init__(self, url: str, *, busy_timeout: float = 30.0) -> None:
        self.url = url
        self.dialect = make_url(url).get_backend_name()
        self.busy_timeout = busy_timeout
        self.faults = StoreFaults()
        self.health = StoreHealth()
        # Values over BIG_VALUE bytes are handled one at a time in this process (a write of
        # one, or a read of one): each costs a few copies of itself, not of all of them.
        self._big_values = asyncio.Lock()
        self._engine: AsyncEngine | None = None
        self._run_nums: dict[str, int] = {}
        self._chats: dict[str, tuple[int, int]] = {}  # chat id: (its key, last_seq committed)
        self._writer: Any = None  # SQLite: the write path's aiosqlite connection
        self._tool_upserts: dict[tuple[str, ...], Any] = {}
        self._compiled_cache: dict[tuple[int, tuple[str, ...]], tuple[Any, Any]] = {}
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
        """Open the engine and bring the schema up to date (once: a started store stays)."""
        if self._engine is not None:
            return
        url = make_url(self.url)
        kwargs: dict[str, Any] = {
            "json_serializer": _json_dumps,
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
        engine = create_async_engine(url, **kwargs)
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
                cur.execute("PRAGMA synchronous=NORMAL")
                cur.execute("PRAGMA foreign_keys=ON")
                cur.execute(f"PRAGMA busy_timeout={int(busy_ms)}")
                cur.close()

        self._engine = engine
        async with self._writing(), engine.begin() as conn:
            await conn.run_sync(run_migrations)
        if self.is_sqlite:
            import aiosqlite

            # the write path's own connection (see _append_fast): transactions by hand
            path = url.database or ""
            writer = await aiosqlite.connect(path, timeout=self.busy_timeout, isolation_level=None)
            for pragma in ("synchronous=NORMAL", "foreign_keys=ON", f"busy_timeout={int(busy_ms)}"):
                await writer.execute(f"PRAGMA {pragma}")
            self._writer = writer

    async def close(self) -> None:
        """Dispose of the engine's connections."""
        if self._writer is not None:
            await self._writer.close()
            self._writer = None
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
    async def transaction(self, purpose: str = "write") -> AsyncIterator[AsyncConnection]:
        """A write transaction (serialized with the others on SQLite).

        A transient failure (:func:`is_transient`) marks the store degraded
        (:attr:`health`) until a write succeeds. ``purpose`` names the write for
        :attr:`faults` (``"events"``, ``"run_end"``, ``"write"``).
        """
        try:
            async with self._writing(), self.engine.begin() as conn:
                self.faults.check(purpose)
                yield conn
        except Exception as e:
            if is_transient(e):
                self.health.failed(describe_error(e))
            raise
        self.health.succeeded()

    def clean_text(self, value: str | None) -> str | None:
        r"""``value`` made storable: PostgreSQL text cannot hold NUL (U+FFFD instead).

        Example:
            >>> Store("postgresql+asyncpg://h/d").clean_text("a\x00")
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
            async with self._writing(), self.engine.connect() as conn:
                yield conn
            return
        async with self.engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="REPEATABLE READ")
            async with conn.begin():
                yield conn

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
            await conn.execute(insert(chats).values(**row, num=_next_num(chats, self.is_sqlite)))
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
            await conn.execute(insert(runs).values(**run, num=_next_num(runs, self.is_sqlite)))

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

    async def set_chat(self, conn: AsyncConnection, chat_id: str, **values: Any) -> None:
        """Inside a transaction: change a chat's fields (texts made storable)."""
        clean = {k: self._clean_text(v) if isinstance(v, str) else v for k, v in values.items()}
        await conn.execute(update(chats).where(chats.c.id == chat_id).values(**clean))

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
        purpose: str = "events",
        writes: PlannedWrites | None = None,
    ) -> list[EventRecord]:
        """Give ``new`` the chat's next seqs and commit them, with ``before``/``after`` writes.

        ``before`` runs after the seqs are allocated and before the insert
        (e.g. to insert the run the records point to); ``after`` runs after the
        insert; ``writes`` gives, from the records, more statements and their rows
        (:meth:`execute_writes`), run after the insert. All in one transaction. Raises
        :class:`NotFoundError` for an unknown chat.

        On SQLite, a batch with ``writes`` only (the write path of agent events) is
        committed in one call into the driver's thread (:meth:`_append_fast`).

        **One odd record never rolls back the others**: a payload that cannot be
        serialized is stored as :func:`unstorable_record` (its line kept), and when
        the database refuses the batch for its data (not for its availability), the
        batch is written again record by record and the refused record becomes an
        ``unstorable`` one. ``purpose`` names the write for :attr:`faults`.
        """
        big = any(r.raw is not None and len(r.raw) > BIG_VALUE for r in new)
        hooks = (before, after, writes)
        if not big:
            return await self._append_all(chat_id, new, hooks, purpose)
        async with self._big_values:
            release_memory()
            try:
                return await self._append_all(chat_id, new, hooks, purpose)
            finally:
                release_memory()

    async def _append_all(
        self,
        chat_id: str,
        new: Sequence[NewRecord],
        hooks: tuple[ExtraWrites | None, ExtraWrites | None, PlannedWrites | None],
        purpose: str,
    ) -> list[EventRecord]:
        prepared = [self._prepare(r) for r in new]
        try:
            if self._writer is not None and hooks[0] is None and hooks[1] is None:
                recs = await self._append_fast(chat_id, prepared, hooks[2], purpose)
                if recs is not None:
                    return recs
            return await self._append(chat_id, prepared, hooks, purpose, one_by_one=False)
        except DBAPIError as e:
            if is_transient(e) or isinstance(e, IntegrityError) or len(prepared) < 2:
                raise
            logger.warning(
                "a batch of %d record(s) was refused (%s); writing it one by one",
                len(prepared),
                describe_error(e),
            )
        for _ in range(len(prepared)):
            try:
                return await self._append(chat_id, prepared, hooks, purpose, one_by_one=True)
            except _RecordRefusedError as refused:
                i = refused.index
                marker = unstorable_record(prepared[i][0], describe_error(refused.error))
                prepared[i] = self._prepare(marker)
        raise StoreUnavailableError("the database refused every record of the batch")

    def _prepare(self, r: NewRecord) -> _Prepared:
        """The record (raw made storable), its payload serialized once here (``None``: not
        stored), its line as bytes and a size hint (:attr:`EventRecord.size_hint`).

        An agent record whose line is exactly its ``data`` in compact JSON (what the CLI
        writes) is stored as that line only, as it came: ``payload`` NULL, rebuilt from the
        line when read (:meth:`EventRecord.from_row`). Any other record keeps its payload
        (on SQLite bound as UTF-8 bytes: no decoded copy) and its line, if any.
        """
        raw = r.raw
        payload = r.payload
        if raw is not None and r.source == "agent" and len(payload) == 2 and "data" in payload:
            # once per agent event: no helper calls on the common path (BENCHMARKS.md, ingest)
            line = raw if raw.__class__ is bytes else _line_bytes(raw)
            data = payload["data"]
            try:
                same = orjson.dumps(data) == line
            except (orjson.JSONEncodeError, TypeError, ValueError, RecursionError):
                same = False
            if same and classify(data) == r.type:  # a str enum: equal to its value
                derived = r.derived
                return r, None, line, len(line) if derived is None else _size_hint(len(line), derived)
        try:
            data = orjson.dumps(payload)
        except (orjson.JSONEncodeError, TypeError, ValueError, RecursionError) as e:
            reason = f"{type(e).__name__}: {str(e)[:200]}"
            logger.warning("a %s record cannot be stored as JSON (%s): kept as its raw line", r.type, reason)
            r = unstorable_record(r, f"the event cannot be serialized: {reason}")
            data = orjson.dumps(r.payload)
        stored = None if r.raw is None else _line_bytes(r.raw)
        encoded = _Encoded(data if self.is_sqlite else data.decode())
        return r, encoded, stored, _size_hint(len(data), r.derived)

    async def _append(
        self,
        chat_id: str,
        new: list[_Prepared],
        hooks: tuple[ExtraWrites | None, ExtraWrites | None, PlannedWrites | None],
        purpose: str,
        *,
        one_by_one: bool,
    ) -> list[EventRecord]:
        before, after, writes = hooks
        n = len(new)
        ts = now_ms()
        async with self.transaction(purpose) as conn:
            bump = (
                update(chats)
                .where(chats.c.id == chat_id)
                .values(last_seq=chats.c.last_seq + n, updated_ms=ts)
                .returning(chats.c.last_seq, chats.c.num)
            )
            if self.is_sqlite:  # one hop (see execute_writes)
                got = await self._in_driver(conn, [(self._BUMP_SQLITE, [(n, ts, chat_id)])])
                keys = got[0][0] if got[0] else None
            else:
                keys = (await conn.execute(bump)).first()
            if keys is None:
                raise NotFoundError(f"no chat {chat_id}")
            last, chat_key = int(keys[0]), keys[1]
            first = last - n + 1
            recs = _appended_records(chat_id, first, ts, new)
            if before is not None:
                await before(conn, recs)
            run_ids = {r.run_id for r, _, _, _ in new if r.run_id is not None}
            run_keys, found = await self._run_keys(conn, run_ids)
            rows = [
                (
                    chat_key,
                    first + i,
                    None if r.run_id is None else run_keys.get(r.run_id),
                    ts,
                    None if encoded is None else r.source,
                    None if encoded is None else r.type,
                    None if encoded is None else r.subtype,
                    encoded,
                    line,
                )
                for i, (r, encoded, line, _) in enumerate(new)
            ]
            if rows and not one_by_one:
                await self._insert_events(conn, rows)
            for i, row in enumerate(rows if one_by_one else ()):
                try:
                    await self._insert_events(conn, [row])
                except DBAPIError as e:
                    if is_transient(e):
                        raise
                    raise _RecordRefusedError(i, e) from None
            if writes is not None:
                await self.execute_writes(conn, writes(recs))
            if after is not None:
                await after(conn, recs)
        # committed: what the fast path needs (the chat's keys never change)
        self._known(self._run_nums, found)
        self._known(self._chats, {chat_id: (chat_key, last)})
        return recs

    @staticmethod
    def _known(cache: dict[str, Any], values: dict[str, Any]) -> None:
        if values:
            if len(cache) > 4096:
                cache.clear()
            cache.update(values)

    async def _append_fast(
        self, chat_id: str, new: list[_Prepared], writes: PlannedWrites | None, purpose: str
    ) -> list[EventRecord] | None:
        """:meth:`_append` on SQLite in **one** call into a writer connection's thread: the
        chat's seqs bumped, the records inserted, ``writes`` run, committed (``BEGIN
        IMMEDIATE`` … ``COMMIT``; a rollback on any failure). The seqs are allocated here
        from the chat's ``last_seq`` as this process last committed it, and the bump checks
        it (``WHERE last_seq = ?``): if another process wrote to the chat meanwhile, nothing
        is written and ``None`` is returned (the caller takes the path of :meth:`_append`,
        which also fills what this one needs: the chat's and runs' keys).

        Hand-written because through SQLAlchemy each statement costs aiosqlite 3–4 thread
        hops and each transaction two more (~1 ms each on a loaded machine): they were most
        of the write path's time (BENCHMARKS.md, 2026-11-23).
        """
        async with self._writing():
            known = self._chats.get(chat_id)
            run_ids = {r.run_id for r, _, _, _ in new if r.run_id is not None}
            if known is None or any(r not in self._run_nums for r in run_ids):
                return None
            chat_key, last = known
            n = len(new)
            ts = now_ms()
            first = last + 1
            keys = self._run_nums
            # the rows' values in one flat list (no tuple kept per row), in _EVENT_COLUMNS'
            # order, inserted by multi-row statements (_insert_rows)
            values: list[Any] = []
            put = values.extend
            seq = first
            for r, encoded, line, _ in new:
                run_key = None if r.run_id is None else keys[r.run_id]
                if encoded is None:  # an agent line stored alone
                    put((chat_key, seq, run_key, ts, None, None, None, None, line))
                else:
                    put((chat_key, seq, run_key, ts, r.source, r.type, r.subtype, encoded.text, line))
                seq += 1
            # the extra writes need each record's seq and time only: the records themselves
            # are made while the driver's thread writes (below)
            planned = self._plan_writes(writes(Stamps(first, ts, n)) if writes is not None else [])
            writer = self._writer
            assert writer is not None
            bump = (n, ts, chat_id, last)
            insert_rows = self._insert_rows

            def run() -> bool:
                import sqlite3

                db = writer._conn
                sql = "BEGIN IMMEDIATE"
                try:
                    db.execute(sql)
                    try:
                        sql = self._BUMP_CHECKED
                        if db.execute(sql, bump).fetchone() is None:
                            db.rollback()
                            return False
                        sql = self._INSERT_SQLITE
                        insert_rows(db, values)
                        for sql, params in planned:
                            db.executemany(sql, params)
                        db.commit()
                    except BaseException:
                        db.rollback()
                        raise
                except sqlite3.Error as e:
                    raise DBAPIError.instance(sql, None, e, sqlite3.Error) from None
                return True

            try:
                self.faults.check(purpose)
                job = asyncio.ensure_future(writer._execute(run))
                await asyncio.sleep(0)  # the job is queued: the thread writes while this makes records
                recs = _appended_records(chat_id, first, ts, new)
                done: bool = await job
            except Exception as e:
                if is_transient(e):
                    self.health.failed(describe_error(e))
                raise
            self.health.succeeded()
            if not done:
                self._chats.pop(chat_id, None)
                return None
            self._chats[chat_id] = (chat_key, last + n)
        return recs

    _BUMP_CHECKED = (
        "UPDATE chats SET last_seq = last_seq + ?, updated_ms = ? WHERE id = ? AND last_seq = ? RETURNING num"
    )

    async def execute_writes(
        self, conn: AsyncConnection, writes: Sequence[tuple[Any, Sequence[dict[str, Any]]]]
    ) -> None:
        """Inside a transaction: run each ``(statement, rows)`` in order (an ``executemany``
        of the rows; a statement's own bound values fill what the rows do not name).

        On SQLite all of them run in **one** call into the driver's thread: through
        SQLAlchemy each statement costs aiosqlite 3–4 thread hops (make a cursor, execute,
        fetch, close: ~0.5 ms on a loaded machine), which were most of the write path's
        time. Each statement is compiled once (by SQLAlchemy, for this dialect) and its
        rows bound as SQLAlchemy would (its bind processors: JSON, booleans). Hand-written
        because neither SQLAlchemy nor aiosqlite runs several statements in one hop.
        """
        writes = [(stmt, rows) for stmt, rows in writes if rows]
        if not self.is_sqlite:
            for stmt, rows in writes:
                await conn.execute(stmt, list(rows))
            return
        await self._in_driver(conn, self._plan_writes(writes))

    def _plan_writes(
        self, writes: Sequence[tuple[Any, Sequence[dict[str, Any]]]]
    ) -> list[tuple[str, list[tuple[Any, ...]]]]:
        """SQLite: each ``(statement, rows)`` as its SQL and its rows' parameters."""
        planned = []
        for stmt, rows in writes:
            if not rows:
                continue
            sql, names, fixed, procs = self._compiled(stmt, tuple(rows[0]))
            params = [
                tuple(
                    (procs[n](row[n]) if n in procs else row[n]) if n in row else fixed[n] for n in names
                )
                for row in rows
            ]
            planned.append((sql, params))
        return planned

    @staticmethod
    async def _in_driver(
        conn: AsyncConnection, planned: list[tuple[str, list[tuple[Any, ...]]]]
    ) -> list[list[Any]]:
        """Run SQLite statements (SQL, rows) in the transaction of ``conn``, in one call into
        aiosqlite's thread; returns each one's rows (``RETURNING``). The driver's errors
        become SQLAlchemy's, as for any statement."""
        import sqlite3

        raw = await conn.get_raw_connection()
        driver: Any = raw.driver_connection  # aiosqlite.Connection

        def run() -> list[list[Any]]:
            db = driver._conn
            out = []
            for sql, params in planned:
                try:
                    if len(params) == 1:
                        out.append(db.execute(sql, params[0]).fetchall())
                    else:
                        db.executemany(sql, params)
                        out.append([])
                except sqlite3.Error as e:
                    raise DBAPIError.instance(sql, None, e, sqlite3.Error) from None
            return out

        result: list[list[Any]] = await driver._execute(run)
        return result

    def _compiled(
        self, stmt: Any, keys: tuple[str, ...]
    ) -> tuple[str, list[str], dict[str, Any], dict[str, Any]]:
        """``stmt`` compiled for ``keys``: its SQL, its parameters' names in order, the
        values bound in it, the bind processors (cached)."""
        cache_key = (id(stmt), keys)
        hit = self._compiled_cache.get(cache_key)
        if hit is not None and hit[0] is stmt:
            found: tuple[str, list[str], dict[str, Any], dict[str, Any]] = hit[1]
            return found
        compiled: Any = stmt.compile(dialect=self.engine.dialect, column_keys=list(keys))
        names = list(compiled.positiontup or ())
        fixed = {}
        procs = dict(getattr(compiled, "_bind_processors", {}) or {})
        for n in names:
            if n not in keys:
                bind = compiled.binds[n]
                value = bind.effective_value
                fixed[n] = procs[n](value) if n in procs else value
        plan = (str(compiled), names, fixed, {n: f for n, f in procs.items() if n in keys})
        if len(self._compiled_cache) > 256:
            self._compiled_cache.clear()
        self._compiled_cache[cache_key] = (stmt, plan)
        return plan

    _EVENT_COLUMNS = ("chat_key", "seq", "run_key", "ts_ms", "source", "type", "subtype", "payload", "raw")

    async def _insert_events(self, conn: AsyncConnection, rows: list[tuple[Any, ...]]) -> None:
        """Insert rows of ``events`` (tuples in :attr:`_EVENT_COLUMNS`' order, the payload
        already JSON). On SQLite, one ``executemany`` of the driver: no per-row work in
        SQLAlchemy (it was most of the write path's time). On PostgreSQL, one multi-row
        ``INSERT`` (one statement: the NOTIFY trigger fires once per batch)."""
        if self.is_sqlite:
            plain = [(*row[:7], None if row[7] is None else row[7].text, row[8]) for row in rows]
            await self._in_driver(conn, [(self._INSERT_SQLITE, plain)])
        else:
            names = self._EVENT_COLUMNS
            await conn.execute(insert(events), [dict(zip(names, row, strict=True)) for row in rows])

    _BUMP_SQLITE = (
        "UPDATE chats SET last_seq = last_seq + ?, updated_ms = ? WHERE id = ? RETURNING last_seq, num"
    )
    _INSERT_SQLITE = f"INSERT INTO events ({', '.join(_EVENT_COLUMNS)}) VALUES ({', '.join('?' * 9)})"
    _INSERTS_SQLITE = tuple(
        (k, head + ", ".join([row] * k))
        for k, head, row in zip(
            (64, 32, 16, 8, 4, 2, 1),
            [f"INSERT INTO events ({', '.join(_EVENT_COLUMNS)}) VALUES "] * 7,
            [f"({', '.join('?' * 9)})"] * 7,
            strict=True,
        )
    )
    """A multi-row ``INSERT`` of each size :meth:`_insert_rows` uses (64 rows: 576 values,
    under the 999 of SQLite's older builds)."""

    @classmethod
    def _insert_rows(cls, db: Any, values: list[Any]) -> None:
        """In the driver's thread: insert rows of ``events`` given as one flat list of values
        (9 per row, in :attr:`_EVENT_COLUMNS`' order) with multi-row ``INSERT`` statements
        of 64 rows, the rest by halves (32, 16, …, 1: seven statements, all cached).

        Against one ``executemany``: a third less of SQLite's and the driver's time (one
        statement step and one bind call per 64 rows, not per row) and the GIL released
        for a whole statement, not taken back after each row (BENCHMARKS.md, ingest).

        Example:
            >>> import sqlite3
            >>> db = sqlite3.connect(":memory:")
            >>> _ = db.execute(f"CREATE TABLE events ({', '.join(Store._EVENT_COLUMNS)})")
            >>> Store._insert_rows(db, [k for seq in range(1, 101) for k in (1, seq, None, 0,
            ...                    None, None, None, None, b"{}")])
            >>> db.execute("SELECT count(*), min(seq), max(seq) FROM events").fetchone()
            (100, 1, 100)
        """
        at, end = 0, len(values)
        for k, sql in cls._INSERTS_SQLITE:
            step = 9 * k
            while end - at >= step:
                db.execute(sql, values[at : at + step])
                at += step
        if at != end:
            raise ValueError(f"{end} values are not rows of {len(cls._EVENT_COLUMNS)}")

    async def _run_keys(
        self, conn: AsyncConnection, run_ids: set[str]
    ) -> tuple[dict[str, int], dict[str, int]]:
        """The ``num`` of each run (their key in ``events``), and those read from the database
        (cached by :meth:`_append` once committed: a run's key never changes)."""
        known = self._run_nums
        missing = [r for r in run_ids if r not in known]
        found: dict[str, int] = {}
        if missing:
            res = await conn.execute(select(runs.c.id, runs.c.num).where(runs.c.id.in_(missing)))
            found = {str(i): int(n) for i, n in res}
        return {r: known.get(r) or found[r] for r in run_ids if r in known or r in found}, found

    async def events_after(
        self, chat_id: str, after_seq: int, limit: int, *, run_id: str | None = None
    ) -> list[EventRecord]:
        """Up to ``limit`` records of the chat with ``seq > after_seq``, in order."""
        cond = and_(_events_where(chat_id, run_id), events.c.seq > after_seq)
        q = (
            select(*_key_columns(chat_id), events.c.payload, events.c.raw)
            .select_from(_EVENTS_RUNS)
            .where(cond)
            .order_by(events.c.seq)
            .limit(limit)
        )
        async with self.engine.connect() as conn:
            res = await conn.execute(q)
            return [EventRecord.from_row(r) for r in res]

    async def read_page(
        self,
        chat_id: str,
        after_seq: int,
        limit: int,
        *,
        max_bytes: int,
        max_field_bytes: int,
        include_raw: bool = False,
        run_id: str | None = None,
    ) -> tuple[list[EventRecord], bool]:
        """A page of records after ``after_seq``: at most ``limit`` records and about
        ``max_bytes`` (at least one record), each with its fields over ``max_field_bytes``
        cut (:func:`cut_record`). Returns ``(records, has_more)``.

        Memory stays bounded whatever the rows hold: sizes are read first, a line is
        read cut by the database, and a payload over the field limit is read alone,
        cut, and let go before the next.
        """
        cond = and_(_events_where(chat_id, run_id), events.c.seq > after_seq)
        # Sizes in bytes. SQLite's text functions stop at a NUL character: measure and cut
        # the BLOB of the text there (PostgreSQL text holds no NUL).
        if self.is_sqlite:
            # payload is bound as UTF-8 bytes (a BLOB: its length is read without its
            # content); older rows are TEXT without NUL (JSON escapes it).
            plen = func.length(events.c.payload)
            rlen = func.coalesce(func.length(cast(events.c.raw, LargeBinary)), 0)
        else:
            plen = func.octet_length(cast(events.c.payload, Text))
            rlen = func.coalesce(func.octet_length(events.c.raw), 0)
        sizes_q = select(events.c.seq, plen, rlen).where(cond).order_by(events.c.seq).limit(limit + 1)
        async with self.engine.connect() as conn:
            sizes = [(int(r[0]), int(r[1] or 0), int(r[2] or 0)) for r in await conn.execute(sizes_q)]
        has_more = len(sizes) > limit
        sizes = sizes[:limit]
        chosen: list[tuple[int, int, int]] = []
        total = 0
        for seq, p, r in sizes:
            # An agent line stored alone (payload NULL) is its payload's data: about as long.
            whole = p or r
            cost = 200 + min(whole, 4 * max_field_bytes) + (min(r, max_field_bytes) if include_raw else 0)
            if chosen and total + cost > max_bytes:
                has_more = True
                break
            chosen.append((seq, whole, r))
            total += cost
        if not chosen:
            return [], has_more
        raw_col: Any = cast(events.c.raw, LargeBinary) if self.is_sqlite else events.c.raw
        raw_cut = func.substr(raw_col, 1, max_field_bytes + 1)
        big = {seq for seq, p, _ in chosen if p > max_field_bytes}
        payload_col = type_coerce(
            case((plen > max_field_bytes, None), else_=events.c.payload), events.c.payload.type
        )
        # the line when asked for, and always for a line stored alone (it is the payload:
        # whole unless over the field limit, then read alone by _read_big)
        raw_sel = raw_cut if include_raw else case((events.c.payload.is_(None), raw_cut), else_=null())
        cols = [*_key_columns(chat_id), payload_col.label("payload"), raw_sel.label("raw")]
        first, last = chosen[0][0], chosen[-1][0]
        rows_q = (
            select(*cols)
            .select_from(_EVENTS_RUNS)
            .where(and_(cond, events.c.seq >= first, events.c.seq <= last))
            .order_by(events.c.seq)
        )
        raw_sizes = {seq: r for seq, _, r in chosen}
        # A string of a payload (and the text rebuilt from it) is never longer than the payload.
        payload_sizes = {seq: p for seq, p, _ in chosen}
        out: list[EventRecord] = []
        async with self.engine.connect() as conn:
            for row in (await conn.execute(rows_q)).all():
                seq = row._mapping["seq"]
                if seq in big:
                    async with self._big_values:
                        rec, raw_size = await self._read_big(conn, row, include_raw, max_field_bytes)
                        rec = cut_record(rec, max_field_bytes, raw_size=raw_size, include_raw=include_raw)
                        release_memory()
                    out.append(rec)
                    continue
                rec = EventRecord.from_row(row)
                rec.size_hint = payload_sizes.get(seq)
                if not include_raw:
                    rec.raw = None
                raw_size = raw_sizes.get(seq) if rec.raw is not None else None
                out.append(cut_record(rec, max_field_bytes, raw_size=raw_size, include_raw=include_raw))
        return out, has_more

    async def _read_big(
        self, conn: AsyncConnection, row: Any, include_raw: bool, limit: int
    ) -> tuple[EventRecord, int | None]:
        """The record of ``row`` (its payload over the field limit, not read) read alone: its
        payload whole, its line cut to about ``limit`` bytes when asked for. Returns it and
        the whole line's size. A line stored alone is the payload's data: parsed from the
        line read whole; a payload stored as ``{…,"data":<line>}`` with the line not stored
        gives the line from its tail, cut without rebuilding it."""
        m = row._mapping
        seq, chat_id, run_id, ts = m["seq"], m["chat_id"], m["run_id"], m["ts_ms"]
        source = m["source"] or "agent"
        rec = EventRecord(seq, chat_id, run_id, ts, source, m["type"] or "", m["subtype"], {}, None)
        pcol = cast(events.c.payload, LargeBinary if self.is_sqlite else Text)
        rcol = cast(events.c.raw, LargeBinary) if self.is_sqlite else events.c.raw
        where = and_(events.c.chat_key == _chat_key(rec.chat_id), events.c.seq == rec.seq)
        res = await conn.execute(select(pcol, rcol).where(where))
        text, line = res.one()
        del res
        raw_size: int | None = None
        if text is None:  # the line stored alone
            rec.payload, rec.type, rec.subtype = _from_line(line, m["type"], m["subtype"])
        else:
            if isinstance(text, str):
                text = text.encode()
            rec.payload = orjson.loads(text)
        if include_raw and line is not None:
            raw_size = len(line)
            rec.raw = bytes(memoryview(line)[: limit + 4]).decode("utf-8", "ignore")
        elif include_raw and text is not None and rec.source == "agent" and [*rec.payload][-1:] == ["data"]:
            head = orjson.dumps({k: v for k, v in rec.payload.items() if k != "data"})
            start = len(head) - 1 + len(b',"data":') if len(head) > 2 else len(b'{"data":')
            raw_size = len(text) - 1 - start
            rec.raw = bytes(memoryview(text)[start : start + limit + 4]).decode("utf-8", "ignore")
        del text, line
        return rec, raw_size

    async def get_event(self, chat_id: str, seq: int) -> EventRecord | None:
        """One whole record (nothing cut), or ``None``."""
        q = (
            select(*_key_columns(chat_id), events.c.payload, events.c.raw)
            .select_from(_EVENTS_RUNS)
            .where(and_(events.c.chat_key == _chat_key(chat_id), events.c.seq == seq))
        )
        async with self.engine.connect() as conn:
            row = (await conn.execute(q)).first()
        return EventRecord.from_row(row) if row is not None else None

    async def server_records(self, run_ids: Sequence[str], type_: str) -> list[EventRecord]:
        """The server's records of type ``type_`` of these runs (e.g. requests and their
        answers), in seq order; read through the index of the server's records by run."""
        if not run_ids:
            return []
        q = (
            select(
                events.c.seq,
                chats.c.id.label("chat_id"),
                runs.c.id.label("run_id"),
                events.c.ts_ms,
                events.c.source,
                events.c.type,
                events.c.subtype,
                events.c.payload,
                events.c.raw,
            )
            .select_from(
                runs.join(chats, chats.c.id == runs.c.chat_id).join(
                    events, and_(events.c.chat_key == chats.c.num, events.c.run_key == runs.c.num)
                )
            )
            .where(runs.c.id.in_(list(run_ids)), _SERVER_SOURCE, events.c.type == type_)
            .order_by(events.c.chat_key, events.c.seq)
        )
        async with self.engine.connect() as conn:
            return [EventRecord.from_row(r) for r in await conn.execute(q)]

    async def count_events(self, chat_id: str) -> int:
        """How many records the chat's log holds."""
        async with self.engine.connect() as conn:
            res = await conn.execute(
                select(func.count()).select_from(events).where(events.c.chat_key == _chat_key(chat_id))
            )
            return int(res.scalar_one())

    # ---- tool calls --------------------------------------------------------------------

    _FIRST_KEPT = ("started_seq", "started_ms", "completed_seq", "completed_ms")

    def upsert_tool_calls(self, rows: Sequence[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]]]:
        """The write (for :meth:`execute_writes`) that inserts tool calls or updates them
        (key: run, index in the turn): one statement, built once, and its rows."""
        if not rows:
            return None, []
        clean = []
        for row in rows:
            row = {k: self._clean_text(v) if isinstance(v, str) else v for k, v in row.items()}
            row["output"] = row["output"] or ""
            for key in ("args", "result"):  # one odd value does not roll back the batch
                if row.get(key) is not None:
                    encoded = _encode(row[key])
                    row[key] = encoded if isinstance(encoded, _Encoded) else {"unstorable": encoded}
            clean.append(row)
        columns = tuple(clean[0])
        stmt = self._tool_upserts.get(columns)
        if stmt is None:
            from sqlalchemy.dialects import postgresql, sqlite

            dialect_insert: Any = sqlite.insert if self.is_sqlite else postgresql.insert
            ins = dialect_insert(tool_calls)
            ex = ins.excluded
            changes = {
                k: getattr(ex, k) for k in columns if k not in ("chat_id", "run_id", "idx", *self._FIRST_KEPT)
            }
            for key in self._FIRST_KEPT:
                changes[key] = func.coalesce(getattr(tool_calls.c, key), getattr(ex, key))
            stmt = self._tool_upserts[columns] = ins.on_conflict_do_update(
                index_elements=["run_id", "idx"], set_=changes
            )
        for row in clean[1:]:
            if tuple(row) != columns:
                raise ValueError("tool call rows of one write have the same fields")
        return stmt, clean

    async def list_tool_calls(self, chat_id: str, run_id: str | None = None) -> list[dict[str, Any]]:
        """Tool calls of a chat (or of one of its runs), in the order they started."""
        cond = tool_calls.c.chat_id == chat_id
        if run_id is not None:
            cond = and_(cond, tool_calls.c.run_id == run_id)
        q = (
            select(tool_calls)
            .where(cond)
            .order_by(func.coalesce(tool_calls.c.started_seq, tool_calls.c.completed_seq), tool_calls.c.idx)
        )
        async with self.engine.connect() as conn:
            res = await conn.execute(q)
            return [dict(r._mapping) for r in res]
