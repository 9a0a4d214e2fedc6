"""The records of a chat's log as the store takes and gives them: :class:`NewRecord` in,
:class:`EventRecord` out (what is not stored twice rebuilt when read), and the record stored
in place of one the database cannot take.

Example:
    >>> NewRecord("server", "note", None, {}).source
    'server'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, overload

import orjson

from ...protocol.events import AgentEvent, classify


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
    return {"type": event.type._value_, "data": event.data}  # not .value: ~0.3 µs an event


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
    from ...protocol import AgentEvent

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
