"""The write path: a batch of records appended to a chat's log with the writes of its
transaction (the folded turn state, run fields), in **one** transaction.

Its central promise is :meth:`LogWrites.append`: in one transaction it bumps
``chats.last_seq`` by the number of new records (an ``UPDATE … RETURNING``, which locks the
chat's row on PostgreSQL and takes SQLite's write lock), inserts the records with the seqs
that follow, and runs the caller's extra writes (tool calls, run fields). Either all of it
is committed or none of it is; seqs are per chat, strictly increasing and without gaps.
:func:`turn_writes` makes the writes that apply a folded batch's changes to the run's stored
turn state (``turn_texts``, ``tool_calls``, ``runs``); the batch comes in as plain data
(:class:`TurnBatch`): nothing here folds.

Example:
    >>> _texts_key("text", 2)
    ('text', 2)
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, overload

import orjson
from sqlalchemy import Text, bindparam, cast, func, insert, or_, select, update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection

from ...protocol.changes import (
    Change,
    ErrorReported,
    ResultReceived,
    SegmentClosed,
    SegmentReplaced,
    TextAppended,
    ThinkingAppended,
    ThinkingClosed,
    ToolCallChanged,
    ToolCallOpened,
    TurnInfo,
    UsageReported,
)
from ...protocol.events import classify
from ...protocol.tools import ToolCall, ToolKind, ToolStatus, shown_read_range
from ..models import ACTIVE_STATUSES, chats, events, runs, tool_calls, turn_texts
from .bounds import cut_to, int_in, session_or_none
from .encoding import _encode, _Encoded, json_bytes
from .engine import StoreEngine
from .errors import (
    NotFoundError,
    RunEndedError,
    StoreUnavailableError,
    describe_error,
    is_data_error,
    is_transient,
    refused_for_data,
)
from .ids import now_ms
from .memory import BIG_VALUE, release_memory
from .records import EventRecord, NewRecord, Stamps, unstorable_record

if TYPE_CHECKING:
    from . import Store

logger = logging.getLogger("cursor_agent_api.server")


class _RecordRefusedError(Exception):
    """Record ``index`` of a batch written one by one was refused for its data."""

    def __init__(self, index: int, error: Exception) -> None:
        super().__init__(index)
        self.index = index
        self.error = error


class _WritesRefusedError(Exception):
    """The writes a batch derives from its records (``writes``) were refused for their data."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


ExtraWrites = Callable[[AsyncConnection, list[EventRecord]], Awaitable[None]]

PlannedWrites = Callable[[Sequence[Any]], Sequence[tuple[Any, Sequence[dict[str, Any]]]]]
"""From a batch's records (or only their :class:`Stamp`: seq and time), more writes of its
transaction: ``(statement, rows)`` pairs (:meth:`Store.execute_writes`)."""



_Prepared = tuple[NewRecord, "_Encoded | None", "bytes | None", int]
"""A record ready to insert (:meth:`Store._prepare`)."""



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
    return [_appended(chat_id, first + i, ts, p) for i, p in enumerate(new)]


def _appended(chat_id: str, seq: int, ts: int, prepared: _Prepared) -> EventRecord:
    r, _, _, hint = prepared
    payload = {**r.payload, **r.derived} if r.derived else r.payload
    raw = _text(r.raw)
    return EventRecord(seq, chat_id, r.run_id, ts, r.source, r.type, r.subtype, payload, raw, None, hint)


def _line_is_data(line: bytes, data: Any, type_: str) -> bool:
    """Whether an agent event's line is exactly its ``data`` in compact JSON (what the CLI
    writes), of the type its data says: then it is stored as that line only.

    Example:
        >>> _line_is_data(b'{"type":"result"}', {"type": "result"}, "result:success")
        True
        >>> _line_is_data(b'{"type": "result"}', {"type": "result"}, "result:success")
        False
    """
    try:
        same = orjson.dumps(data) == line
    except (orjson.JSONEncodeError, TypeError, ValueError, RecursionError):
        return False
    return same and classify(data) == type_  # a str enum: equal to its value


class AppendedRecords(Sequence[EventRecord]):
    """The records of a committed append (:func:`_appended_records`), each made when read:
    a batch that nobody watches (no WebSocket subscriber) needs its first seq only, not
    one :class:`EventRecord` per event (and its line decoded) made in the event loop
    (BENCHMARKS.md, ingest, wave 5). Read twice, a record is made twice (equal).

    Example:
        >>> recs = AppendedRecords("c", 7, 1000, [(NewRecord("server", "note", None, {}), None, None, 0)] * 3)
        >>> len(recs), recs[0].seq, recs[-1].seq, [r.seq for r in recs[1:]], [r.seq for r in recs]
        (3, 7, 9, [8, 9], [7, 8, 9])
    """

    __slots__ = ("_chat_id", "_first", "_new", "_ts")

    def __init__(self, chat_id: str, first: int, ts: int, new: list[_Prepared]) -> None:
        self._chat_id, self._first, self._ts, self._new = chat_id, first, ts, new

    def __len__(self) -> int:
        return len(self._new)

    @overload
    def __getitem__(self, i: int) -> EventRecord: ...

    @overload
    def __getitem__(self, i: slice) -> list[EventRecord]: ...

    def __getitem__(self, i: int | slice) -> EventRecord | list[EventRecord]:
        new = self._new
        if isinstance(i, slice):
            return [self[k] for k in range(len(new))[i]]
        k = range(len(new))[i]  # an IndexError as a list's, negative indices from the end
        return _appended(self._chat_id, self._first + k, self._ts, new[k])

    def __iter__(self) -> Iterator[EventRecord]:
        chat_id, ts, seq = self._chat_id, self._ts, self._first
        for p in self._new:
            yield _appended(chat_id, seq, ts, p)
            seq += 1


@dataclass(slots=True)
class _Attempt:
    """An append whose commit was sent: the chat's key, the seqs it took from ``first``,
    its time and its records (what :meth:`LogWrites.append` gives back if it went through)."""

    chat_id: str
    chat_key: Any
    first: int
    ts: int
    new: list[_Prepared]


def _attempt_rows(attempt: _Attempt, run_keys: dict[str, int]) -> list[tuple[Any, ...]]:
    """The rows of ``events`` an attempt inserted, as :meth:`LogWrites._stored_attempt` reads
    them: ``(seq, ts_ms, run_key, source, type, subtype, payload's JSON text, raw)``, given
    its runs' keys (a run not stored: NULL, as the insert wrote it).

    Example:
        >>> new = [(NewRecord("server", "note", None, {}), _Encoded(b'{"a":1}'), None, 7),
        ...        (NewRecord("agent", "user", None, {}, run_id="r"), None, b'{"type":"user"}', 15)]
        >>> for row in _attempt_rows(_Attempt("c", 1, 5, 99, new), {"r": 3}): print(row)
        (5, 99, None, 'server', 'note', None, '{"a":1}', None)
        (6, 99, 3, None, None, None, None, b'{"type":"user"}')
    """
    rows: list[tuple[Any, ...]] = []
    for i, (r, encoded, line, _) in enumerate(attempt.new):
        run_key = None if r.run_id is None else run_keys.get(r.run_id)
        if encoded is None:  # an agent line stored alone
            rows.append((attempt.first + i, attempt.ts, run_key, None, None, None, None, line))
        else:
            payload = encoded.text
            text = payload.decode() if isinstance(payload, bytes) else payload
            rows.append((attempt.first + i, attempt.ts, run_key, r.source, r.type, r.subtype, text, line))
    return rows


class AppendOnce:
    """One append, tried again after a failure, stored **once**: a connection that drops
    during ``COMMIT`` leaves the writer not knowing whether the batch was stored. Pass the
    same object to each try (``append(…, once=…)``): the store notes each attempt whose
    commit it may have sent, and before writing again looks it up (the rows at its seqs,
    each compared with the row it inserted: :meth:`LogWrites._stored_attempt`); if it was
    stored, its records are given back without writing them again (no record twice in
    the log).

    Example:
        >>> once = AppendOnce(); once.uncertain
        False
    """

    __slots__ = ("attempt",)

    def __init__(self) -> None:
        self.attempt: _Attempt | None = None

    @property
    def uncertain(self) -> bool:
        """True while an attempt failed after its commit was sent (it may be stored)."""
        return self.attempt is not None


def _is_busy(error: Exception) -> bool:
    """Whether an ``sqlite3`` error is ``SQLITE_BUSY`` (another connection holds the lock).

    Example:
        >>> import sqlite3
        >>> _is_busy(sqlite3.OperationalError("database is locked")), _is_busy(ValueError("x"))
        (True, False)
    """
    code = getattr(error, "sqlite_errorcode", None)  # Python 3.11+
    if isinstance(code, int):
        return code & 0xFF == 5  # SQLITE_BUSY, and its extended codes
    return "database is locked" in str(error)


def _text(raw: str | bytes | None) -> str | None:
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw



_EVENT_COLUMNS = ("chat_key", "seq", "run_key", "ts_ms", "source", "type", "subtype", "payload", "raw")
"""The ``events`` columns a write fills, in the order of its rows' values."""


def _events_insert(rows: int) -> str:
    """SQLite's ``INSERT INTO events`` of ``rows`` rows of placeholders.

    Example:
        >>> _events_insert(2).endswith("VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?, ?, ?)")
        True
    """
    row = f"({', '.join('?' * len(_EVENT_COLUMNS))})"
    return f"INSERT INTO events ({', '.join(_EVENT_COLUMNS)}) VALUES " + ", ".join([row] * rows)


def _lines_insert(rows: int) -> str:
    """SQLite's ``INSERT INTO events`` of ``rows`` agent lines stored alone, of one chat and
    one run, at one time: ``?1`` the chat's key, ``?2`` the first row's seq (the next rows'
    follow it), ``?3`` the run's key, ``?4`` the time; then one value per row, its line.

    Example:
        >>> print(_lines_insert(2).replace("VALUES ", "VALUES\\n"))
        INSERT INTO events (chat_key, seq, run_key, ts_ms, raw) VALUES
        (?1, ?2 + 0, ?3, ?4, ?5), (?1, ?2 + 1, ?3, ?4, ?6)
    """
    return "INSERT INTO events (chat_key, seq, run_key, ts_ms, raw) VALUES " + ", ".join(
        f"(?1, ?2 + {k}, ?3, ?4, ?{k + 5})" for k in range(rows)
    )


class LogWrites(StoreEngine):
    """The write path of :class:`~cursor_agent_api.server.store.Store` (see the module's text)."""

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
        once: AppendOnce | None = None,
        active_run: str | None = None,
    ) -> Sequence[EventRecord]:
        """Give ``new`` the chat's next seqs and commit them, with ``before``/``after`` writes.

        ``before`` runs after the seqs are allocated and before the insert
        (e.g. to insert the run the records point to); ``after`` runs after the
        insert; ``writes`` gives, from the records, more statements and their rows
        (:meth:`execute_writes`), run after the insert. All in one transaction. Raises
        :class:`NotFoundError` for an unknown chat.

        On SQLite, a batch with ``writes`` only (the write path of agent events) is
        committed in one call, in the event loop's thread (:meth:`_append_fast`).

        **One odd record never rolls back the others**: a payload that cannot be
        serialized is stored as :func:`unstorable_record` (its line kept), and when
        the database refuses the batch for its data (not for its availability), the
        batch is written again record by record and the refused record becomes an
        ``unstorable`` one (:func:`.refused_for_data`); if the writes derived from the
        records (``writes``: the turn state) are refused for a value
        (:func:`.is_data_error`), the records are stored without them (logged).
        ``purpose`` names the write for :attr:`faults`. ``once``: a try of an append that
        may have been stored already (:class:`AppendOnce`): if its last attempt was, its
        records are given back and nothing is written.

        ``active_run``: the run these records belong to must still be active (queued or
        running): in the transaction, after the chat's bump and before the insert, a
        conditional ``UPDATE`` of its row (:data:`_HOLD_RUN`; on PostgreSQL it also locks the
        row, so a concurrent end waits for this commit), on SQLite's fast path a read
        (:data:`_RUN_ACTIVE_SQLITE`: ``BEGIN IMMEDIATE`` holds the write lock). If the run is
        over, the transaction is rolled back, nothing is written, and :class:`RunEndedError`
        is raised: a run's records never follow its final record. A parameter, not a
        ``before`` hook: the SQLite fast path keeps it (BENCHMARKS.md, late records).
        """
        if once is not None and once.attempt is not None:
            stored = await self._stored_attempt(once.attempt)  # a failure keeps it uncertain
            once.attempt = None
            if stored is not None:
                return stored
        big = any(r.raw is not None and len(r.raw) > BIG_VALUE for r in new)
        hooks = (before, after, writes)
        if not big:
            return await self._append_all(chat_id, new, hooks, purpose, once, active_run)
        async with self._big_values:
            release_memory()
            try:
                return await self._append_all(chat_id, new, hooks, purpose, once, active_run)
            finally:
                release_memory()

    async def _append_all(
        self,
        chat_id: str,
        new: Sequence[NewRecord],
        hooks: tuple[ExtraWrites | None, ExtraWrites | None, PlannedWrites | None],
        purpose: str,
        once: AppendOnce | None,
        active_run: str | None = None,
    ) -> Sequence[EventRecord]:
        prepared = self._prepare_all(new)
        try:
            if self._writer is not None and hooks[0] is None and hooks[1] is None:
                recs = await self._append_fast(chat_id, prepared, hooks[2], purpose, once, active_run)
                if recs is not None:
                    return recs
            return await self._append(
                chat_id, prepared, hooks, purpose, once, one_by_one=False, active_run=active_run
            )
        except (DBAPIError, OverflowError) as e:
            if once is not None and self.is_sqlite and isinstance(e, DBAPIError):
                # SQLite: a statement or a COMMIT that fails leaves nothing of the transaction
                # (rolled back in this process before the error reaches here): certain
                once.attempt = None
            if not refused_for_data(e) or (len(prepared) < 2 and hooks[2] is None):
                raise
            logger.warning(
                "a batch of %d record(s) was refused (%s); writing it one by one",
                len(prepared),
                describe_error(e),
            )
        for _ in range(len(prepared) + 1):
            try:
                return await self._append(
                    chat_id, prepared, hooks, purpose, once, one_by_one=True, active_run=active_run
                )
            except _RecordRefusedError as refused:
                i = refused.index
                marker = unstorable_record(prepared[i][0], describe_error(refused.error))
                prepared[i] = self._prepare(marker)
            except _WritesRefusedError as refused:
                # What the records change (the turn state) is derived from them: the records
                # are the log, kept; the next batches' writes bring the state on.
                logger.error(
                    "the writes derived from a batch of %d record(s) of chat %s were refused (%s): "
                    "its records are stored without them",
                    len(prepared),
                    chat_id,
                    describe_error(refused.error),
                )
                hooks = (hooks[0], hooks[1], None)
        raise StoreUnavailableError("the database refused every record of the batch")

    def _prepare_all(self, new: Sequence[NewRecord]) -> list[_Prepared]:
        """Each record :meth:`_prepare` d. An agent event's line that is exactly its data's
        JSON (the common case: the runner's records, :meth:`.RunFold.take`) is recognized
        here, inline: no call per record (BENCHMARKS.md, ingest)."""
        out: list[_Prepared] = []
        add = out.append
        prepare = self._prepare
        for r in new:
            line = r.raw
            payload = r.payload
            if (line.__class__ is bytes and r.derived is None and len(payload) == 2
                    and "data" in payload and r.source == "agent"
                    and _line_is_data(line, payload["data"], r.type)):
                add((r, None, line, len(line)))
                continue
            add(prepare(r))
        return out

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
            if _line_is_data(line, payload["data"], r.type):
                derived = r.derived
                return r, None, line, len(line) if derived is None else _size_hint(len(line), derived)
        try:
            data = json_bytes(payload)
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
        once: AppendOnce | None,
        *,
        one_by_one: bool,
        active_run: str | None = None,
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
            if active_run is not None and not (await conn.execute(_HOLD_RUN, {"run": active_run})).rowcount:
                raise RunEndedError(active_run)  # rolled back: nothing written
            if once is not None:  # from here, a failure may come after the commit went through
                once.attempt = _Attempt(chat_id, chat_key, first, ts, new)
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
                except (DBAPIError, OverflowError) as e:
                    if isinstance(e, DBAPIError) and is_transient(e):
                        raise
                    raise _RecordRefusedError(i, e) from None
            if writes is not None:
                try:
                    await self.execute_writes(conn, writes(recs))
                except (DBAPIError, OverflowError) as e:
                    if not one_by_one or not is_data_error(e):
                        raise
                    raise _WritesRefusedError(e) from None
            if after is not None:
                await after(conn, recs)
        if once is not None:
            once.attempt = None
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
        self,
        chat_id: str,
        new: list[_Prepared],
        writes: PlannedWrites | None,
        purpose: str,
        once: AppendOnce | None = None,
        active_run: str | None = None,
    ) -> Sequence[EventRecord] | None:
        """:meth:`_append` on SQLite in **one** call on a writer connection: the
        chat's seqs bumped, the records inserted, ``writes`` run, committed (``BEGIN
        IMMEDIATE`` … ``COMMIT``; a rollback on any failure). The seqs are allocated here
        from the chat's ``last_seq`` as this process last committed it, and the bump checks
        it (``WHERE last_seq = ?``): if another process wrote to the chat meanwhile, nothing
        is written and ``None`` is returned (the caller takes the path of :meth:`_append`,
        which also fills what this one needs: the chat's and runs' keys).

        Hand-written because through SQLAlchemy each statement costs aiosqlite 3–4 thread
        hops and each transaction two more (~1 ms each on a loaded machine): they were most
        of the write path's time (BENCHMARKS.md, 2026-11-23).

        The transaction runs in the event loop's thread, on a connection that never waits
        for SQLite's lock (``busy_timeout`` 0): a batch of 500 agent lines is ~1–2 ms of
        SQLite, less than the two thread hand-offs into aiosqlite's thread and back cost on
        a loaded machine (BENCHMARKS.md, ingest, wave 6). While another process holds the
        lock, ``BEGIN IMMEDIATE`` is busy at once and the same transaction runs in the
        driver's thread, which waits for the lock (the store's busy timeout) without holding
        up the loop. That connection never checkpoints (a checkpoint copies the WAL into the
        file and syncs it: ~20 ms for 1,000 pages): once it has written about as much WAL as
        SQLite's automatic checkpoint waits for (1,000 pages, estimated from the records'
        size hints and the commits), :meth:`_checkpoint` runs one in the driver's thread.
        """
        async with self._writing():
            known = self._chats.get(chat_id)
            owners = {r.run_id for r, _, _, _ in new}
            run_ids = owners - {None}
            if known is None or any(r not in self._run_nums for r in run_ids):
                return None
            chat_key, last = known
            n = len(new)
            ts = now_ms()
            first = last + 1
            keys = self._run_nums
            lines = [line for _, encoded, line, _ in new if encoded is None]
            insert: Callable[[Any], None]
            if len(lines) == n and len(owners) == 1:
                # the common batch: agent lines stored alone, of one run (the runner's):
                # one value per row, the chat, the seqs, the run and the time bound once
                # per statement (_insert_lines)
                (owner,) = owners
                head = (chat_key, first, None if owner is None else keys[owner], ts)
                insert = functools.partial(self._insert_lines, head=head, lines=lines)
            else:
                # the rows' values in one flat list (no tuple kept per row), in
                # _EVENT_COLUMNS' order, inserted by multi-row statements (_insert_rows)
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
                insert = functools.partial(self._insert_rows, values=values)
            # the extra writes need each record's seq and time only: the records themselves
            # are made when read (AppendedRecords)
            planned = self._plan_writes(writes(Stamps(first, ts, n)) if writes is not None else [])
            writer = self._writer
            assert writer is not None
            bump = (n, ts, chat_id, last)

            def run(db: Any, wait: bool) -> bool | None:
                import sqlite3

                sql = "BEGIN IMMEDIATE"
                try:
                    try:
                        db.execute(sql)
                    except sqlite3.OperationalError as e:
                        if not wait and _is_busy(e):
                            return None  # another process writes: wait in the driver's thread
                        raise
                    try:
                        sql = self._BUMP_CHECKED
                        if db.execute(sql, bump).fetchone() is None:
                            db.rollback()
                            return False
                        if active_run is not None:
                            sql = _RUN_ACTIVE_SQLITE  # BEGIN IMMEDIATE holds the lock: a read is enough
                            if db.execute(sql, (active_run,)).fetchone() is None:
                                raise RunEndedError(active_run)  # rolled back below
                        sql = self._INSERT_SQLITE
                        insert(db)
                        for sql, params in planned:
                            db.executemany(sql, params)
                        db.commit()
                    except BaseException:
                        db.rollback()
                        raise
                except sqlite3.Error as e:
                    raise DBAPIError.instance(sql, None, e, sqlite3.Error) from None
                return True

            if once is not None:
                once.attempt = _Attempt(chat_id, chat_key, first, ts, new)
            try:
                self.may_write(purpose)
                # In this thread first (no thread hand-off: BENCHMARKS.md, ingest, wave 6);
                # if another process holds SQLite's write lock, in the driver's thread,
                # which waits for it (busy_timeout) without holding up the event loop.
                inline = self._inline_writer
                done = None if inline is None else run(inline, False)
                if done is None:
                    done = await writer._execute(lambda: run(writer._conn, True))
                elif done:
                    # the WAL it wrote, about: the records' size hints (their stored bytes),
                    # and ~2 pages each commit writes whatever its size (the chat's row, the
                    # turn's state, a leaf of the log's index; 1.6 measured for one-line batches)
                    self._unchecked_bytes += sum(p[3] for p in new) + 2 * self._page_size
                    if self._unchecked_bytes >= self._checkpoint_bytes:
                        self._unchecked_bytes = 0
                        await self._checkpoint(writer)
                if done:
                    self._chats[chat_id] = (chat_key, last + n)
                    self.faults.check_committed(purpose)
            except RunEndedError:
                if once is not None:
                    once.attempt = None  # rolled back: certain
                self.health.succeeded()
                raise
            except Exception as e:
                if is_transient(e):
                    self.health.failed(describe_error(e), e)
                raise
            self.health.succeeded()
            if once is not None:
                once.attempt = None
            if not done:
                self._chats.pop(chat_id, None)
                return None
        # made when read: most batches are read for their first seq only (no subscriber)
        return AppendedRecords(chat_id, first, ts, new)

    async def _stored_attempt(self, attempt: _Attempt) -> list[EventRecord] | None:
        """The records of an attempt whose commit was sent, if it went through, else ``None``.

        Only on the path of an uncertain failure (:class:`AppendOnce`): the write path pays
        nothing for it. The attempt was committed if each row of the chat at its seqs is
        the row it inserted (:func:`_attempt_rows`: its time, its run, its source, type,
        subtype, its payload's JSON text and its line, compared as stored, byte for byte).
        Seqs and time alone are not enough: the time is taken before the transaction, so
        a writer of the chat (another server) that started in the same millisecond and
        took the same seqs after the attempt rolled back wrote rows at that time too.

        On PostgreSQL the lookup first waits for the chat's row lock (``SELECT … FOR
        UPDATE``): the attempt's transaction holds it from its bump of ``last_seq`` until it
        ends, so a commit the server was still finishing when the writer got its error (a
        connection lost during ``COMMIT``) has landed, or been rolled back, before the
        lookup reads the log (it reads it in a statement of its own, which sees what was
        committed until then). The wait is any writer's of the chat: the server ends a
        transaction whose client is gone when its connection closes (a connection cut
        silently, without a reset, holds the lock until the server's TCP keepalive ends
        it). On SQLite a commit ends in this process before its error reaches the writer.

        What remains: a batch written by another writer in the same millisecond at the
        same seqs **identical** to the attempt's, row for row (the same records of the
        same run), is taken for it; nothing in the rows tells them apart. Raises like any
        read while the database is unavailable."""
        chat_lock = select(chats.c.num).where(chats.c.num == attempt.chat_key).with_for_update()
        run_ids = {p[0].run_id for p in attempt.new} - {None}
        stored = select(
            events.c.seq, events.c.ts_ms, events.c.run_key, events.c.source, events.c.type,
            events.c.subtype, cast(events.c.payload, Text), events.c.raw,
        ).where(
            events.c.chat_key == attempt.chat_key,
            events.c.seq >= attempt.first,
            events.c.seq < attempt.first + len(attempt.new),
        )
        try:
            async with self.begin() as conn:
                if not self.is_sqlite:
                    await conn.execute(chat_lock)
                keys: dict[str, int] = {}
                if run_ids:  # a run's key never changes: those of the attempt's rows
                    res = await conn.execute(select(runs.c.id, runs.c.num).where(runs.c.id.in_(run_ids)))
                    keys = {str(i): int(n) for i, n in res}
                rows = [tuple(row) for row in await conn.execute(stored.order_by(events.c.seq))]
        except Exception as e:
            if is_transient(e):
                self.health.failed(describe_error(e), e)
            raise
        self._chats.pop(attempt.chat_id, None)  # the fast path reads the chat's seq again
        if rows != _attempt_rows(attempt, keys):
            return None
        logger.warning(
            "a batch of %d record(s) of chat %s was stored although its commit failed: not written again",
            len(attempt.new),
            attempt.chat_id,
        )
        return _appended_records(attempt.chat_id, attempt.first, attempt.ts, attempt.new)

    async def _checkpoint(self, writer: Any) -> None:
        """A passive checkpoint of the WAL (what SQLite's automatic one does) in the driver's
        thread, for the commits of the inline connection, which never checkpoints. The
        batches are committed already: a failure is logged, and the next checkpoint tries
        again."""
        try:
            await writer._execute(lambda: writer._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall())
        except Exception as e:  # the WAL only grows until the next one
            logger.warning("SQLite's WAL checkpoint failed (the next batch tries again): %s",
                           describe_error(e))

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

    _EVENT_COLUMNS = _EVENT_COLUMNS

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
    _INSERT_SQLITE = _events_insert(1)
    _INSERTS_SQLITE = tuple((k, _events_insert(k)) for k in (64, 32, 16, 8, 4, 2, 1))
    """A multi-row ``INSERT`` of each size :meth:`_insert_rows` uses (64 rows: 576 values,
    under the 999 of SQLite's older builds)."""

    _LINE_INSERTS_SQLITE = tuple((k, _lines_insert(k)) for k in (256, 128, 64, 32, 16, 8, 4, 2, 1))
    """A multi-row ``INSERT`` of agent lines stored alone of each size :meth:`_insert_lines`
    uses (256 rows: 260 values)."""

    @classmethod
    def _insert_lines(cls, db: Any, *, head: tuple[Any, int, Any, int], lines: list[bytes | None]) -> None:
        """In the writer's transaction: insert agent lines stored alone (``payload``, ``source``,
        ``type`` and ``subtype`` NULL) as the rows of ``events`` that follow ``head``'s seq,
        all of one chat and run, written at one time: ``head`` is ``(chat_key, first seq,
        run_key, ts_ms)``. Statements of 256 rows, the rest by halves (nine statements, all
        cached), each binding the head once and one value per row, the line: the rows are
        those :meth:`_insert_rows` would insert, with a ninth of the values bound and none
        made in Python (BENCHMARKS.md, ingest, wave 6).

        Example:
            >>> import sqlite3
            >>> db = sqlite3.connect(":memory:")
            >>> _ = db.execute(f"CREATE TABLE events ({', '.join(LogWrites._EVENT_COLUMNS)})")
            >>> LogWrites._insert_lines(db, head=(1, 5, 2, 99), lines=[b"%d" % i for i in range(300)])
            >>> db.execute("SELECT count(*), min(seq), max(seq), count(DISTINCT seq) FROM events").fetchone()
            (300, 5, 304, 300)
            >>> db.execute("SELECT * FROM events WHERE seq = 304").fetchone()
            (1, 304, 2, 99, None, None, None, None, b'299')
        """
        chat_key, first, run_key, ts = head
        at, end = 0, len(lines)
        for k, sql in cls._LINE_INSERTS_SQLITE:
            while end - at >= k:
                db.execute(sql, [chat_key, first + at, run_key, ts, *lines[at : at + k]])
                at += k

    @classmethod
    def _insert_rows(cls, db: Any, values: list[Any]) -> None:
        """In the writer's transaction: insert rows of ``events`` given as one flat list of values
        (9 per row, in :attr:`_EVENT_COLUMNS`' order) with multi-row ``INSERT`` statements
        of 64 rows, the rest by halves (32, 16, …, 1: seven statements, all cached).

        Against one ``executemany``: a third less of SQLite's and the driver's time (one
        statement step and one bind call per 64 rows, not per row) and the GIL released
        for a whole statement, not taken back after each row (BENCHMARKS.md, ingest).

        Example:
            >>> import sqlite3
            >>> db = sqlite3.connect(":memory:")
            >>> _ = db.execute(f"CREATE TABLE events ({', '.join(LogWrites._EVENT_COLUMNS)})")
            >>> LogWrites._insert_rows(db, [k for seq in range(1, 101) for k in (1, seq, None, 0,
            ...                    None, None, None, None, b"{}")])
            >>> db.execute("SELECT count(*), min(seq), max(seq) FROM events").fetchone()
            (100, 1, 100)
        """
        at, end = 0, len(values)
        width = len(cls._EVENT_COLUMNS)
        for k, sql in cls._INSERTS_SQLITE:
            step = width * k
            while end - at >= step:
                db.execute(sql, values[at : at + step])
                at += step
        if at != end:
            raise ValueError(f"{end} values are not rows of {width}")

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


# ---- the folded turn state (turn_texts, tool_calls, runs) ----------------------------------


class TurnBatch(Protocol):
    """A batch of one run's records, folded, as :func:`turn_writes` reads it (plain data:
    :class:`~cursor_agent_api.server.turns.FoldedBatch` is one). ``changes`` are each
    record's changes (:mod:`cursor_agent_api.protocol.changes`), ``error_base`` how many
    error messages the turn had before the batch, ``turn`` the turn's fields after it."""

    @property
    def chat_id(self) -> str: ...

    @property
    def run_id(self) -> str: ...

    @property
    def changes(self) -> Sequence[tuple[Change, ...]]: ...

    @property
    def error_base(self) -> int: ...

    @property
    def turn(self) -> dict[str, Any]: ...


_RUNNING = ToolStatus.RUNNING


def _texts_key(kind: str, idx: int) -> tuple[str, int]:
    return (kind, idx)


def _dialect_insert(store: Store) -> Any:
    from sqlalchemy.dialects import postgresql, sqlite

    return sqlite.insert if store.is_sqlite else postgresql.insert


def _text_entry(
    texts: dict[tuple[str, int], dict[str, Any]], kind: str, idx: int, seq: int
) -> dict[str, Any]:
    key = (kind, idx)
    entry = texts.get(key)
    if entry is None:
        entry = {"set": False, "parts": [], "closed": False, "seq": seq, "bytes": None, "whole_seq": None}
        texts[key] = entry
    return entry


def _tool_row(
    chat_id: str, run_id: str, index: int, call: ToolCall, rec: EventRecord, opened: bool, limit: int
) -> dict[str, Any]:
    from .cuts import cut_value

    running = call.status is _RUNNING
    # The agent's numbers and names bounded to their columns (the events keep them whole).
    columns = tool_calls.c
    started = int_in(columns.started_ms, call.started_at_ms)
    completed = int_in(columns.completed_ms, call.completed_at_ms)
    row: dict[str, Any] = {
        "chat_id": chat_id,
        "run_id": run_id,
        "idx": index,
        "call_id": call.call_id,
        "kind": call.kind.value,
        "name": cut_to(columns.name, call.name),
        "status": call.status.value,
        "args": call.args,
        "result": call.result,
        "output": call.output,
        "description": call.description,
        "exit_code": int_in(columns.exit_code, call.exit_code),
        "started_ms": started if started is not None else (rec.ts_ms if opened and running else None),
        "completed_ms": None if running else (completed or rec.ts_ms),
        "duration_ms": int_in(columns.duration_ms, call.duration_ms),
        "started_seq": rec.seq if opened and running else None,
        "completed_seq": None if running else rec.seq,
    }
    # The whole values are in the call's records: the table keeps them cut (not twice), and
    # what was cut in its own column, "cuts" (GET …/tool-calls shows it as ``truncated``):
    # never in the agent's result, whose keys are the agent's (migration 0009).
    cuts: list[dict[str, Any]] = []
    for key in ("args", "result", "output"):
        row[key] = cut_value(row[key], limit, f"/{key}", cuts)
    if call.kind is ToolKind.READ:
        # A cut read's range is counted on its whole content, here at hand (the table keeps
        # its beginning): kept in the cut, the chat's state reads no record for it.
        for cut in cuts:
            if cut["field"].startswith("/result"):
                cut["read_range"] = shown_read_range(call.read_range, call.content)
                break
    row["cuts"] = cuts
    # The output is a function of the result (``ToolCall.output``): not stored a second
    # time, derived when read (``webui.stored_output``); a cut one is noted in "cuts".
    row["output"] = ""
    return row


async def write_turn(
    store: Store,
    conn: AsyncConnection,
    batch: TurnBatch,
    recs: Sequence[EventRecord],
    limit: int,
) -> None:
    """Inside the batch's transaction: apply its changes to the run's stored turn state."""
    await store.execute_writes(conn, turn_writes(store, batch, recs, limit))


def turn_writes(
    store: Store, batch: TurnBatch, recs: Sequence[EventRecord], limit: int
) -> list[tuple[Any, list[dict[str, Any]]]]:
    """The writes (statements and rows, :meth:`.Store.execute_writes`) that apply a batch's
    changes to the run's stored turn state; nothing is executed here."""
    from .cuts import utf8_prefix, utf8_size

    texts: dict[tuple[str, int], dict[str, Any]] = {}
    calls: dict[int, dict[str, Any]] = {}
    errors = batch.error_base
    session: str | None = None
    usage: dict[str, Any] | None = None
    result: str | None = None
    chat_id, run_id = batch.chat_id, batch.run_id
    if len(recs) != len(batch.changes):
        raise ValueError(f"{len(recs)} records for {len(batch.changes)} changes")
    # Most changes are text appended to the segment the previous one appended to: their
    # text goes straight to that entry's parts (``segment``), without a lookup. ``recs`` is
    # read only where a change needs its record (it may make each one when read: Stamps).
    segment = -1
    parts: list[str] = []
    for i, changes in enumerate(batch.changes):
        for c in changes:
            if c.__class__ is TextAppended:
                if c[0] != segment:
                    segment = c[0]
                    parts = _text_entry(texts, "text", segment, recs[i].seq)["parts"]
                parts.append(c[1])
                continue
            segment = -1  # another change may replace the entry's parts
            rec = recs[i]
            if isinstance(c, (TextAppended, ThinkingAppended)):
                kind = "text" if isinstance(c, TextAppended) else "thinking"
                _text_entry(texts, kind, c[0], rec.seq)["parts"].append(c.text)
            elif isinstance(c, (SegmentReplaced, ErrorReported)):
                if isinstance(c, SegmentReplaced):
                    entry = _text_entry(texts, "text", c.segment, rec.seq)
                    text = c.text
                else:
                    entry = _text_entry(texts, "error", errors, rec.seq)
                    text = c.message
                    errors += 1
                    entry["closed"] = True
                entry["set"] = True
                size = utf8_size(text) if len(text) * 4 > limit else len(text)
                if size > limit:
                    entry["parts"] = [utf8_prefix(text, limit)]
                    entry["bytes"], entry["whole_seq"] = size, rec.seq
                else:
                    entry["parts"] = [text]
                    entry["bytes"] = entry["whole_seq"] = None
            elif isinstance(c, (SegmentClosed, ThinkingClosed)):
                kind = "text" if isinstance(c, SegmentClosed) else "thinking"
                _text_entry(texts, kind, c[0], rec.seq)["closed"] = True
            elif isinstance(c, (ToolCallOpened, ToolCallChanged)):
                index: int = c[0]
                opened = isinstance(c, ToolCallOpened)
                row = _tool_row(chat_id, run_id, index, c.call, rec, opened, limit)
                before = calls.get(index)
                if before is not None:
                    for key in ("started_seq", "started_ms", "completed_seq", "completed_ms"):
                        if before[key] is not None:
                            row[key] = before[key]
                calls[index] = row
            elif isinstance(c, TurnInfo):
                if c.session_id:
                    session = c.session_id
            elif isinstance(c, UsageReported):
                usage = c.usage.to_dict()
            elif isinstance(c, ResultReceived):
                result = c.result
    clean = store.clean_text
    writes: list[tuple[Any, list[dict[str, Any]]]] = []
    if texts:
        appended: list[dict[str, Any]] = []
        replaced: list[dict[str, Any]] = []
        for (kind, idx), e in texts.items():
            row = {
                "chat_id": chat_id,
                "run_id": run_id,
                "kind": kind,
                "idx": idx,
                "text": clean("".join(e["parts"])),
                "closed": e["closed"],
                "opened_seq": e["seq"],
                "bytes": e["bytes"],
                "whole_seq": e["whole_seq"],
            }
            (replaced if e["set"] else appended).append(row)
        appending, replacing = _text_upserts(store)
        writes += [(appending, appended), (replacing, replaced)]
    writes.append(store.upsert_tool_calls(list(calls.values())))
    values: dict[str, Any] = {
        "last_seq": recs[-1].seq,
        "first_seq": recs[0].seq,
        "turn": batch.turn,
    }
    if usage is not None:
        values["usage"] = usage
    if result is not None:
        values["result"] = clean(result)
    session = session_or_none(session)
    if session is not None:
        values["session_id"] = store.clean_text(session)
        writes.append((_chat_session, [{"chat": chat_id, "v_session": values["session_id"]}]))
    row = {f"v_{k}": v for k, v in values.items()}
    writes.append((_run_update(tuple(values)), [{**row, "run": run_id}]))
    return writes


_TEXT_UPSERTS: dict[str, tuple[Any, Any]] = {}


def _text_upserts(store: Store) -> tuple[Any, Any]:
    """The two upserts of ``turn_texts`` (text appended: concatenated by the database; text
    replaced: set), built once per dialect."""
    hit = _TEXT_UPSERTS.get(store.dialect)
    if hit is None:
        insert = _dialect_insert(store)
        keys = ["run_id", "kind", "idx"]
        stmt = insert(turn_texts)
        ex = stmt.excluded
        appending = stmt.on_conflict_do_update(
            index_elements=keys,
            set_={"text": turn_texts.c.text.concat(ex.text), "closed": or_(turn_texts.c.closed, ex.closed)},
        )
        stmt = insert(turn_texts)
        ex = stmt.excluded
        replacing = stmt.on_conflict_do_update(
            index_elements=keys,
            set_={
                "text": ex.text,
                "closed": or_(turn_texts.c.closed, ex.closed),
                "bytes": ex.bytes,
                "whole_seq": ex.whole_seq,
            },
        )
        hit = _TEXT_UPSERTS[store.dialect] = (appending, replacing)
    return hit


_HOLD_RUN = (
    update(runs)
    .where(runs.c.id == bindparam("run"), or_(*(runs.c.status == s for s in ACTIVE_STATUSES)))
    .values(status=runs.c.status)
)
"""The run still active: a no-op ``UPDATE`` of its row whose row count says so (and, on
PostgreSQL, locks the row until the commit: an end written meanwhile waits and then wins)."""

_RUN_ACTIVE_SQLITE = "SELECT 1 FROM runs WHERE id = ? AND status IN ({})".format(
    ", ".join(f"'{s}'" for s in ACTIVE_STATUSES)  # constants (models.py), not input
)
"""The same on SQLite's fast path, inside ``BEGIN IMMEDIATE`` (the database's write lock
held: no end can be written meanwhile), as a read: the run's row is not rewritten."""

_chat_session = update(chats).where(chats.c.id == bindparam("chat")).values(session_id=bindparam("v_session"))

_RUN_UPDATES: dict[tuple[str, ...], Any] = {}


def _run_update(keys: tuple[str, ...]) -> Any:
    """``UPDATE runs`` of these fields (rows: ``v_<field>`` and ``run``); ``first_seq`` is
    kept once set. Built once per set of fields."""
    stmt = _RUN_UPDATES.get(keys)
    if stmt is None:
        values: dict[str, Any] = {k: bindparam(f"v_{k}", type_=runs.c[k].type) for k in keys}
        if "first_seq" in values:
            values["first_seq"] = func.coalesce(runs.c.first_seq, values["first_seq"])
        stmt = _RUN_UPDATES[keys] = update(runs).where(runs.c.id == bindparam("run")).values(values)
    return stmt


async def replace_turn(store: Store, batch: TurnBatch, recs: Sequence[EventRecord], limit: int) -> bool:
    """In a transaction of its own: a run's whole turn state, from the changes of all its
    records (``batch``), in place of what was stored, for a run that has none yet (written
    before the state existed: ``runs.turn`` NULL). False, and nothing written, when the run
    has it by then: another request or process folded it meanwhile. The run's row is locked
    first (PostgreSQL's ``FOR UPDATE``; SQLite's write lock): two folds of one run follow
    each other, never deadlock, and the second finds the state there."""
    async with store.transaction() as conn:
        locked = select(runs.c.turn).where(runs.c.id == batch.run_id).with_for_update()
        row = (await conn.execute(locked)).one_or_none()
        if row is None or row.turn is not None:
            return False
        for table in (tool_calls, turn_texts):
            await conn.execute(table.delete().where(table.c.run_id == batch.run_id))
        if recs:
            await write_turn(store, conn, batch, recs, limit)
        await store.set_run(conn, batch.run_id, turn=batch.turn)
    return True
