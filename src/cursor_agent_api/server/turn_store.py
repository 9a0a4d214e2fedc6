"""The SQL of the folded turn state: applying a batch's changes, reading a chat's state.

:func:`write_turn` runs inside the transaction that inserts the batch's records
(:func:`.turns.append_folded`), so the state and the log never disagree. It applies the
changes the transcript returned, aggregated per batch (one row write per segment, block or
call the batch touched, not one per delta):

* ``turn_texts``: a segment's text (``kind`` ``text``), a thinking block (``thinking``) or an
  error message (``error``), by index; appended text is concatenated by the database, a
  replaced one is set (cut to ``max_field_bytes``: ``bytes`` is then its whole size and
  ``whole_seq`` the record whose ``/payload/text`` holds it);
* ``tool_calls``: each call by its index in the turn, with its whole latest state (values
  cut to ``max_field_bytes``, the whole ones are in the call's records);
* ``runs``: ``first_seq``, ``last_seq``, ``turn`` (:meth:`.turns.RunFold.turn`), ``usage``,
  ``result`` and the agent's chat id (also the chat's).

:func:`read_chat_turns` reads a chat's state and its ``last_seq`` as one snapshot.

Example:
    >>> _texts_key("text", 2)
    ('text', 2)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, bindparam, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from ..protocol.changes import (
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
from ..protocol.tools import ToolCall, ToolStatus
from .models import chats, runs, tool_calls, turn_texts

if TYPE_CHECKING:
    from .store import EventRecord, Store
    from .turns import FoldedBatch, RunFold

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
    from .store import cut_value

    running = call.status is _RUNNING
    row: dict[str, Any] = {
        "chat_id": chat_id,
        "run_id": run_id,
        "idx": index,
        "call_id": call.call_id,
        "kind": call.kind.value,
        "name": call.name,
        "status": call.status.value,
        "args": call.args,
        "result": call.result,
        "output": call.output,
        "description": call.description,
        "exit_code": call.exit_code,
        "started_ms": call.started_at_ms
        if call.started_at_ms is not None
        else (rec.ts_ms if opened and running else None),
        "completed_ms": None if running else (call.completed_at_ms or rec.ts_ms),
        "duration_ms": call.duration_ms,
        "started_seq": rec.seq if opened and running else None,
        "completed_seq": None if running else rec.seq,
    }
    # The whole values are in the call's records: the table keeps them cut (not twice), and
    # what was cut under the result's "_cut" key (GET …/tool-calls shows it as ``truncated``).
    cuts: list[dict[str, Any]] = []
    for key in ("args", "result", "output"):
        row[key] = cut_value(row[key], limit, f"/{key}", cuts)
    if cuts:
        result = row["result"]
        row["result"] = {**result, "_cut": cuts} if isinstance(result, dict) else {"_cut": cuts}
    # The output is a function of the result (``ToolCall.output``): not stored a second
    # time, derived when read (``webui.stored_output``); a cut one is noted in "_cut".
    row["output"] = ""
    return row


async def write_turn(
    store: Store,
    conn: AsyncConnection,
    batch: FoldedBatch,
    recs: Sequence[EventRecord],
    limit: int,
) -> None:
    """Inside the batch's transaction: apply its changes to the run's stored turn state."""
    await store.execute_writes(conn, turn_writes(store, batch, recs, limit))


def turn_writes(
    store: Store, batch: FoldedBatch, recs: Sequence[EventRecord], limit: int
) -> list[tuple[Any, list[dict[str, Any]]]]:
    """The writes (statements and rows, :meth:`.Store.execute_writes`) that apply a batch's
    changes to the run's stored turn state; nothing is executed here."""
    from .store import utf8_prefix, utf8_size

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


async def close_turn(
    store: Store, conn: AsyncConnection, fold: RunFold, rec: EventRecord, limit: int
) -> tuple[Any, ...]:
    """Inside the transaction of a run's final record ``rec``: close the fold (calls still
    running are abandoned) and store what that changed. Returns the changes."""
    from .turns import FoldedBatch

    changes = fold.close()
    if changes:
        batch = FoldedBatch(fold.chat_id, fold.run_id, [], [changes], fold.errors, fold.turn())
        await write_turn(store, conn, batch, [rec], limit)
    return changes


async def replace_turn(store: Store, batch: FoldedBatch, recs: Sequence[EventRecord], limit: int) -> None:
    """In a transaction of its own: a run's whole turn state, from the changes of all its
    records (``batch``), in place of what was stored (a run written before the state existed)."""
    async with store.transaction() as conn:
        for table in (tool_calls, turn_texts):
            await conn.execute(table.delete().where(table.c.run_id == batch.run_id))
        if recs:
            await write_turn(store, conn, batch, recs, limit)
        await store.set_run(conn, batch.run_id, turn=batch.turn)


async def read_chat_turns(
    store: Store, chat_id: str
) -> tuple[int, list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """A chat's ``last_seq``, runs, texts and tool calls, read as one snapshot.

    The state is written with the records, in their transaction: read in one
    snapshot (PostgreSQL: ``REPEATABLE READ``; SQLite: with this process's writes held),
    it is exactly the fold of the records up to ``last_seq``.
    """
    async with store.snapshot() as conn:
        last = (
            await conn.execute(select(chats.c.last_seq).where(chats.c.id == chat_id))
        ).scalar_one_or_none()
        if last is None:
            return -1, [], [], []
        run_rows = [
            dict(r._mapping)
            for r in await conn.execute(
                select(runs).where(runs.c.chat_id == chat_id).order_by(runs.c.created_ms, runs.c.id)
            )
        ]
        text_rows = [
            dict(r._mapping)
            for r in await conn.execute(select(turn_texts).where(turn_texts.c.chat_id == chat_id))
        ]
        call_rows = [
            dict(r._mapping)
            for r in await conn.execute(
                select(tool_calls)
                .where(tool_calls.c.chat_id == chat_id)
                .order_by(tool_calls.c.run_id, tool_calls.c.idx)
            )
        ]
    return int(last), run_rows, text_rows, call_rows


async def get_tool_call(store: Store, run_id: str, index: int) -> dict[str, Any] | None:
    """One stored tool call of a run, by its index, or ``None``."""
    async with store.engine.connect() as conn:
        row = (
            await conn.execute(
                select(tool_calls).where(and_(tool_calls.c.run_id == run_id, tool_calls.c.idx == index))
            )
        ).first()
    return dict(row._mapping) if row is not None else None
