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
    resolve_pointer,
    utf8_size,
)
from .turns import TOOL_CHANGES, Changes, changes_json, cut_change

MAX_MESSAGE_BYTES = 512 * 1024
"""Bytes an ``event`` message may have at most, live or replayed (half of the 1 MiB many
WebSocket clients accept by default: Python's ``websockets``). See :func:`record_message`."""

_LIMITS = (64 * 1024, 16 * 1024, 4096, 1024, 256)

_PAGE_READS_PAYLOAD = frozenset({"run", "request", "worker", "context"})
"""Record types whose payload the page reads (``web/js/timeline.js``, ``apply``); of any other
record it renders the changes only, so the payload goes before a change is cut."""

_APPENDED = ("text_appended", "thinking_appended")
_LISTS = ("matches", "files", "references", "todos")


def record_message(rec: EventRecord, changes: list[dict[str, Any]] | None = None) -> str:
    """The WebSocket message for a record (``op: "event"``, see ``docs/websocket.md``), with
    what the record changed in its run's folded turn (``changes``) when it changed anything.

    Never over :data:`MAX_MESSAGE_BYTES`: each field is cut at max_field_bytes already, but the
    payload and the changes each carry their copy (a tool call's output is in the payload, in
    ``call`` and in ``view``; a text in ``payload.data``, ``payload.text`` and its change). A
    message over the bound is made to fit by :class:`_Fit`, which measures its parts once: the
    copies the page does not read go first (``call``, the payload of a record the page renders
    from its changes), a view is cut last (it lists what it cut, the page offers Show all), an
    appended text only when it alone is over the bound.

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
    return _Fit(rec, changes or []).message().decode()


def _message(rec: EventRecord, changes: list[dict[str, Any]] | None) -> bytes:
    msg: dict[str, Any] = {"op": "event", "seq": rec.seq, "event": rec.to_dict()}
    if changes:
        msg["changes"] = changes
    return json_bytes(msg)  # the agent's integers may be past orjson's 64 bits


def _size(value: Any) -> int:
    return len(json_bytes(value))


class _Fit:
    """A message over the bound, cut until it fits. Its parts (the event without its payload,
    the payload, ``truncated``, each change) are serialized once; a cut ``call`` or payload is
    not serialized again (its size less what the cut took is an upper bound, :func:`_taken`),
    a cut change (a view, smaller) is; the whole message once at the end. In order:

    1. the tool call changes' ``call`` (the payload's data again) cut from 64 KiB to 256 bytes;
    2. the record's strings cut from 128 KiB to 256 bytes;
    3. the payload goes, for a record the page renders from its changes (``truncated``: one
       entry, ``/payload``, its whole size), then the ``call`` of the changes;
    4. the changes' strings cut from 128 KiB to 1 KiB (appended texts aside; a view lists what
       it cut in ``cut``), then a view's lists halved (``output`` added to ``cut``: Show all
       gives the whole list), then their strings cut to 256 bytes;
    5. the payload goes, for the other records;
    6. appended texts cut (with ``bytes`` and ``seq``) to share what is left;
    7. the last form, always within the bound: no payload, every change's string at 256 bytes
       and no lists, or no changes at all.
    """

    def __init__(self, rec: EventRecord, changes: list[dict[str, Any]]) -> None:
        self.rec = rec
        self.event = rec.to_dict()
        self.changes = list(changes)
        self.payload_size = _size(self.event["payload"])
        self.whole_payload = self.payload_size + _extra(self.event["payload"], self.event.get("truncated"))
        self.truncated_size = _size(self.event["truncated"]) if "truncated" in self.event else 0
        self.sizes = [_size(d) for d in self.changes]
        bare = {k: v for k, v in self.event.items() if k not in ("payload", "truncated")}
        # the event's own fields and the frame: '{"op":"event","seq":N,"event":{...}}'
        self.head = len(json_bytes({"op": "event", "seq": rec.seq, "event": bare}))

    def total(self) -> int:
        n = self.head + len(',"payload":') + self.payload_size
        if "truncated" in self.event:
            n += len(',"truncated":') + self.truncated_size
        if self.changes:
            n += len(',"changes":[]') + sum(self.sizes) + len(self.sizes) - 1
        return n

    def fits(self) -> bool:
        return self.total() <= MAX_MESSAGE_BYTES

    def set_change(self, i: int, d: dict[str, Any]) -> None:
        if d is not self.changes[i]:
            self.changes[i] = d
            self.sizes[i] = _size(d)

    def message(self) -> bytes:
        for step in (self.cut_calls, self.cut_payload, self.drop_own_payload, self.cut_changes,
                     self.trim_lists, self.cut_changes_more, self.drop_payload, self.cut_appended):
            if self.fits() or step():
                text = self.serialized()
                if len(text) <= MAX_MESSAGE_BYTES:
                    return text
                break  # (never: the parts add up to the message)
        return self.last_form()

    def serialized(self) -> bytes:
        msg: dict[str, Any] = {"op": "event", "seq": self.rec.seq, "event": self.event}
        if self.changes:
            msg["changes"] = self.changes
        return json_bytes(msg)

    def cut_calls(self) -> bool:
        for limit in _LIMITS:
            for i, d in enumerate(self.changes):
                if d["kind"] in TOOL_CHANGES and "call" in d:
                    cuts: list[dict[str, Any]] = []
                    call = cut_value(d["call"], limit, "/call", cuts)
                    if call is not d["call"]:
                        self.changes[i] = {**d, "call": call}
                        self.sizes[i] -= _taken(cuts, limit)  # (not serialized again)
            if self.fits():
                return True
        return False

    def cut_change(self, i: int, limit: int) -> None:
        """Change ``i`` cut at ``limit``; its size less what the cut took (:func:`_taken`),
        serialized again only when ``cut`` grew (a view lists what it cut)."""
        cuts: list[dict[str, Any]] = []
        d = self.changes[i]
        cut = cut_change(d, limit, self.rec.seq, cuts)
        if cut is not d:
            self.changes[i] = cut
            grew = (("view" in d and len(cut["view"]["cut"]) != len(d["view"]["cut"]))
                    or ("bytes" not in d and "bytes" in cut))  # (a text's bytes and seq)
            self.sizes[i] = _size(cut) if grew else self.sizes[i] - _taken(cuts, limit)

    def cut_payload(self) -> bool:
        for limit in (128 * 1024, *_LIMITS):
            cuts: list[dict[str, Any]] = []
            payload = cut_value(self.event["payload"], limit, "/payload", cuts)
            if payload is not self.event["payload"]:
                first = {t["field"]: t for t in self.event.get("truncated", ())}
                for t in cuts:
                    first.setdefault(t["field"], t)
                self.event = {**self.event, "payload": payload, "truncated": list(first.values())}
                self.payload_size -= _taken(cuts, limit)  # (not serialized again)
                self.truncated_size = _size(self.event["truncated"])
            if self.fits():
                return True
        return False

    def drop_own_payload(self) -> bool:
        if self.changes and self.rec.type not in _PAGE_READS_PAYLOAD:
            self.drop_payload()
            for i, d in enumerate(self.changes):
                if "call" in d:
                    self.set_change(i, {k: v for k, v in d.items() if k != "call"})
        return self.fits()

    def cut_changes(self, limits: tuple[int, ...] = (128 * 1024, *_LIMITS[:-1])) -> bool:
        for limit in limits:
            for i, d in enumerate(self.changes):
                if d["kind"] not in _APPENDED:
                    self.cut_change(i, limit)
            if self.fits():
                return True
        return False

    def cut_changes_more(self) -> bool:
        return self.cut_changes(_LIMITS[-1:])

    def trim_lists(self) -> bool:
        views = [i for i, d in enumerate(self.changes) if "view" in d]
        share = sum(self.sizes[i] for i in views)
        room = MAX_MESSAGE_BYTES - (self.total() - share)
        n = None  # first the share of the items that fits, then half as many each time
        while not self.fits():
            longest = max((len(self.changes[i]["view"].get(k) or ()) for i in views for k in _LISTS),
                          default=0)
            if not longest:
                return False
            n = max(0, longest * room // share - 1) if n is None and share and room > 0 else longest // 2
            for i in views:
                self.set_change(i, {**self.changes[i], "view": _trimmed(self.changes[i]["view"], n)})
        return True

    def drop_payload(self) -> bool:
        if self.event["payload"] or self.payload_size > 2:
            self.event = {**self.event, "payload": {},
                          "truncated": [{"field": "/payload", "bytes": self.whole_payload}]}
            self.payload_size = 2
            self.truncated_size = _size(self.event["truncated"])
        return self.fits()

    def cut_appended(self) -> bool:
        appended = [i for i, d in enumerate(self.changes) if d["kind"] in _APPENDED]
        if appended:
            room = MAX_MESSAGE_BYTES - (self.total() - sum(self.sizes[i] for i in appended))
            share = room // len(appended) - 256  # (the rest of a change is small)
            for _ in range(2):  # (again with the kept part's own ratio, if it was higher)
                for i in appended:
                    # the text's own JSON bytes per UTF-8 byte (6 for control characters, 1
                    # for most text): a text cut to fit its share, not a sixth of it (review 48)
                    text = self.changes[i].get("text") or ""
                    per_byte = max(1.0, (_size(text) - 2) / max(1, utf8_size(text)))
                    self.cut_change(i, max(256, int(share / per_byte)))
                    self.sizes[i] = _size(self.changes[i])  # (exactly: a few, each small)
                if self.fits():
                    break
        return self.fits()

    def last_form(self) -> bytes:
        self.drop_payload()
        self.event = {**self.event, **cut_value({k: self.event[k] for k in ("type", "subtype")},
                                               256, "", [])}
        changes = []
        for d in self.changes:
            d = cut_change({k: v for k, v in d.items() if k != "call"}, 256, self.rec.seq)
            changes.append({**d, "view": _trimmed(d["view"], 0)} if "view" in d else d)
        self.changes = changes
        text = self.serialized()
        if len(text) <= MAX_MESSAGE_BYTES:
            return text
        self.changes = []  # (thousands of changes in one record: REST has its turn)
        return self.serialized()


def _taken(cuts: list[dict[str, Any]], limit: int) -> int:
    """At least the bytes ``cut_value`` took out of a value's JSON with these ``cuts`` at
    ``limit``: each string lost at least ``bytes - limit`` UTF-8 bytes, and its JSON at least
    as many (an escape is longer than its character). A size less this is an upper bound."""
    return sum(t["bytes"] - limit for t in cuts)


def _trimmed(view: dict[str, Any], n: int) -> dict[str, Any]:
    """``view`` with its lists at most ``n`` items, ``output`` listed in ``cut`` when one was
    (``output`` is the whole list, one item per line)."""
    if not any(len(view.get(k) or ()) > n for k in _LISTS):
        return view
    out = {**view, **{k: view[k][:n] for k in _LISTS if isinstance(view.get(k), list)}}
    if "output" not in out["cut"]:
        out["cut"] = [*out["cut"], "output"]
    return out


def _extra(payload: Any, truncated: list[dict[str, Any]] | None) -> int:
    """The bytes the store's cuts (``truncated``) took out of ``payload``."""
    extra = 0
    for t in truncated or ():
        field = str(t.get("field", ""))
        if field.startswith("/payload/"):
            try:
                value = resolve_pointer({"payload": payload}, field)
            except KeyError:
                continue
            if isinstance(value, str):
                extra += max(0, int(t.get("bytes", 0)) - utf8_size(value))
    return extra


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
