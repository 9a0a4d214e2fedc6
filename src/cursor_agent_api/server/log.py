"""The chat event log: commit, then broadcast — in seq order, one chat at a time.

:class:`EventLog` puts :class:`~.store.Store` and :class:`~.hub.Hub` together.
For each chat, appends run under a lock that is held from the start of the
transaction until the committed records have been handed to the hub, so live
subscribers always receive a chat's records in seq order, and never a record
that is not durable.

Example:
    >>> record_message(EventRecord(3, "c", None, 0, "server", "run", "queued", {}, None))
    '{"op":"event","seq":3,"event":{"seq":3,"chat_id":"c","run_id":null,"ts_ms":0,"source":"server","type":"run","subtype":"queued","payload":{}}}'
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from .hub import Hub
from .store import (
    AppendOnce,
    EventRecord,
    ExtraWrites,
    NewRecord,
    PlannedWrites,
    Store,
    cut_record,
    cut_value,
    json_bytes,
)
from .turns import TOOL_CHANGES, Changes, changes_json, cut_change

MAX_MESSAGE_BYTES = 512 * 1024
"""Bytes an ``event`` message may have at most, live or replayed (half of the 1 MiB many
WebSocket clients accept by default: Python's ``websockets``). See :func:`record_message`."""

_LIMITS = (64 * 1024, 16 * 1024, 4096, 1024, 256)


def record_message(rec: EventRecord, changes: list[dict[str, Any]] | None = None) -> str:
    """The WebSocket message for a record (``op: "event"``, see ``docs/websocket.md``), with
    what the record changed in its run's folded turn (``changes``) when it changed anything.

    Never over :data:`MAX_MESSAGE_BYTES`: each field is cut at max_field_bytes already, but the
    payload and the changes each carry their copy (a tool call's output is in the payload, in
    ``call`` and in ``view``). A message over the bound has its tool calls' ``call`` (the
    payload's data again, which the page does not read) cut harder first, then the record's
    strings and the changes' alike (:func:`~.turns.cut_change`: a view lists what it cut, the
    page offers Show all; the record's ``truncated`` lists its cuts with their whole size).

    Example:
        >>> import json
        >>> big = EventRecord(5, "c", "r", 0, "agent", "x", None, {"a": "x" * 200_000,
        ...                   "b": "y" * 200_000, "c": "z" * 200_000}, None)
        >>> text = record_message(big)
        >>> m = json.loads(text)
        >>> len(text.encode()) <= MAX_MESSAGE_BYTES, m["event"]["truncated"][0]
        (True, {'field': '/payload/a', 'bytes': 200000})
    """
    text = _message(rec, changes)
    if len(text) <= MAX_MESSAGE_BYTES:
        return text.decode()
    if changes and any(d["kind"] in TOOL_CHANGES for d in changes):
        for limit in _LIMITS:
            changes = [{**d, "call": cut_value(d["call"], limit, "/call", [])}
                       if d["kind"] in TOOL_CHANGES else d for d in changes]
            text = _message(rec, changes)
            if len(text) <= MAX_MESSAGE_BYTES:
                return text.decode()
    for limit in (128 * 1024, *_LIMITS):
        rec = _cut_harder(rec, limit)
        if changes:
            changes = [cut_change(d, limit, rec.seq) for d in changes]
        text = _message(rec, changes)
        if len(text) <= MAX_MESSAGE_BYTES:
            return text.decode()
    # (small values by the thousand: nothing left to cut) the payload goes; REST has it
    rec = _cut_harder(rec, 0, whole=len(json_bytes(rec.payload)))
    if changes:
        changes = [{k: v for k, v in d.items() if k != "call"} for d in changes]
    return _message(rec, changes).decode()


def _message(rec: EventRecord, changes: list[dict[str, Any]] | None) -> bytes:
    msg: dict[str, Any] = {"op": "event", "seq": rec.seq, "event": rec.to_dict()}
    if changes:
        msg["changes"] = changes
    return json_bytes(msg)  # the agent's integers may be past orjson's 64 bits


def _cut_harder(rec: EventRecord, limit: int, whole: int | None = None) -> EventRecord:
    """``rec`` (cut already) cut at ``limit``; a field cut before keeps the whole size its first
    cut noted. ``whole``: the payload goes, noted as ``/payload`` of that size."""
    if whole is not None:
        noted = [*(rec.truncated or ()), {"field": "/payload", "bytes": whole}]
        return EventRecord(rec.seq, rec.chat_id, rec.run_id, rec.ts_ms, rec.source, rec.type,
                           rec.subtype, {}, None, noted)
    cut = cut_record(rec, limit)
    if cut is rec or not cut.truncated:
        return cut
    first: dict[str, dict[str, Any]] = {}
    for t in cut.truncated:
        first.setdefault(t["field"], t)
    return EventRecord(cut.seq, cut.chat_id, cut.run_id, cut.ts_ms, cut.source, cut.type,
                       cut.subtype, cut.payload, cut.raw, list(first.values()))


class EventLog:
    """Append to a chat's log and publish what was committed.

    Tested through the server in ``tests/server/test_replay.py`` and ``test_flow.py``.
    """

    def __init__(self, store: Store, hub: Hub, max_field_bytes: int = 256 * 1024) -> None:
        self.store = store
        self.hub = hub
        self.max_field_bytes = max_field_bytes
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def _lock(self, chat_id: str) -> asyncio.Lock:
        lock = self._locks.get(chat_id)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[chat_id] = lock
        return lock

    def _publish(
        self, chat_id: str, recs: Sequence[EventRecord], changes: Sequence[Changes] | None = None
    ) -> None:
        if recs and self.hub.subscriber_count(chat_id):
            limit = self.max_field_bytes  # live records are cut like replayed ones
            if changes is None:
                messages = [(r.seq, record_message(cut_record(r, limit))) for r in recs]
            else:
                messages = [
                    (r.seq, record_message(cut_record(r, limit), changes_json(c, r, limit)))
                    for r, c in zip(recs, changes, strict=True)
                ]
            self.hub.publish(chat_id, messages)

    async def append(
        self,
        chat_id: str,
        new: Sequence[NewRecord],
        *,
        before: ExtraWrites | None = None,
        after: ExtraWrites | None = None,
        purpose: str = "events",
        changes: Sequence[Changes] | None = None,
        writes: PlannedWrites | None = None,
        once: AppendOnce | None = None,
        active_run: str | None = None,
    ) -> Sequence[EventRecord]:
        """Commit ``new`` (see :meth:`Store.append`), then broadcast it; ``changes`` are
        what each record changed in its run's turn (see :mod:`.turns`), sent with it.
        ``once``: the same object for each try of one append (:class:`.store.AppendOnce`);
        ``active_run``: only while that run is active (else :class:`.store.RunEndedError`)."""
        lock = self._lock(chat_id)
        async with lock:
            recs = await self.store.append(
                chat_id, new, before=before, after=after, purpose=purpose, writes=writes, once=once,
                active_run=active_run,
            )
            self._publish(chat_id, recs, changes)
        return recs

    async def create_run(
        self,
        chat_id: str,
        prompt: str,
        record: Callable[[dict[str, Any]], NewRecord],
        *,
        server_id: str | None = None,
        run_id: str | None = None,
        once: AppendOnce | None = None,
    ) -> dict[str, Any]:
        """Insert a queued run with its ``run/queued`` record, then broadcast the record."""
        lock = self._lock(chat_id)
        async with lock:
            run, rec = await self.store.create_run(
                chat_id, prompt, record, server_id=server_id, run_id=run_id, once=once
            )
            self._publish(chat_id, [rec])
        return run
