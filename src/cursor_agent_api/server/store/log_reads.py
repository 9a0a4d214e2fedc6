"""Reading a chat's log: records after a seq (whole, or a page bounded in bytes with long
fields cut), one record, the server's records of runs, the count.

Example:
    >>> [c.name for c in _key_columns("c")][:2]
    ['seq', 'chat_id']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from sqlalchemy import (
    LargeBinary,
    String,
    Text,
    and_,
    case,
    cast,
    func,
    literal,
    null,
    select,
    text,
    type_coerce,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from ..models import chats, events, runs
from .cuts import cut_record
from .engine import StoreEngine
from .keys import _chat_key, _run_key, id_batches
from .memory import release_memory
from .records import EventRecord, _from_line

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



class LogReads(StoreEngine):
    """The reads of the log of :class:`~cursor_agent_api.server.store.Store`."""

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
        async with self.connect() as conn:
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
        async with self.connect() as conn:
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
        async with self.connect() as conn:
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
        async with self.connect() as conn:
            row = (await conn.execute(q)).first()
        return EventRecord.from_row(row) if row is not None else None

    async def server_records(self, run_ids: Sequence[str], type_: str) -> list[EventRecord]:
        """The server's records of type ``type_`` of these runs (e.g. requests and their
        answers), in seq order (each chat's); read through the index of the server's records
        by run, the runs named in batches (any number of them: a chat may have more runs
        than a statement takes bound values)."""
        out: list[EventRecord] = []
        for batch in id_batches(run_ids):
            out += await self._server_records(batch, type_)
        out.sort(key=lambda r: (r.chat_id, r.seq))
        return out

    async def _server_records(self, run_ids: list[str], type_: str) -> list[EventRecord]:
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
            .where(runs.c.id.in_(run_ids), _SERVER_SOURCE, events.c.type == type_)
            .order_by(events.c.chat_key, events.c.seq)
        )
        async with self.connect() as conn:
            return [EventRecord.from_row(r) for r in await conn.execute(q)]

    async def count_events(self, chat_id: str) -> int:
        """How many records the chat's log holds."""
        async with self.connect() as conn:
            res = await conn.execute(
                select(func.count()).select_from(events).where(events.c.chat_key == _chat_key(chat_id))
            )
            return int(res.scalar_one())

    # ---- tool calls --------------------------------------------------------------------
