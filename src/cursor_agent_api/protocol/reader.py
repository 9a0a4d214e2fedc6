"""Bytes -> events: :class:`LineFramer` and :func:`parse_event` together.

Sans-I/O, like the rest of :mod:`cursor_agent_api.protocol`: whoever reads the
process (or a file, or a socket) feeds the chunks in.

Example:
    >>> reader = EventReader()
    >>> [e.type.value for e in reader.feed(b'{"type":"user"}\\nbanner\\n{"type":"res')]
    ['user', 'raw']
    >>> [e.type.value for e in reader.close()]
    ['raw']
    >>> reader.object_lines, reader.raw_lines
    (1, 2)
"""

from __future__ import annotations

import orjson

from .events import (
    AgentEvent,
    LineEvent,
    classify,
    error_event,
    event_from_object,
    raw_event,
    too_deep_event,
)
from .framing import DEFAULT_MAX_LINE_BYTES, LineFramer, LineTooLong, Tail
from .limits import SHORTEST_TOO_DEEP, exceeds_depth
from .surrogates import loads_repaired

_FAILED: object = object()

MAX_JOINED_LINES = 16
"""How many physical lines a line that failed to parse may be joined with (see EventReader)."""


def line_too_long_text(size: int, limit: int, setting: str = "max_line_bytes") -> str:
    """What the ``ERROR`` event of a line over the limit says; ``setting`` names the limit
    where the reader sets it (the library's parameter; the command line shows its flag).

    Example:
        >>> print(line_too_long_text(9, 4))  # doctest: +NORMALIZE_WHITESPACE
        a line of 9 bytes exceeded max_line_bytes=4; it was dropped
        (raise max_line_bytes to keep such lines)
    """
    return (f"a line of {size} bytes exceeded {setting}={limit}; it was dropped "
            f"(raise {setting} to keep such lines)")


def _loads(line: bytes) -> object:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        obj = loads_repaired(line)  # not UTF-8, or Node's lone "\\ud83d" (see .surrogates)
        return _FAILED if obj is None else obj


class EventReader:
    """Feed bytes, get :class:`AgentEvent` objects; counts what it read.

    A line over ``max_line_bytes`` becomes an ``ERROR`` event with
    ``data["code"] == "line_too_long"`` (its bytes are dropped as they arrive);
    the unfinished tail at :meth:`close` is parsed like any line (a truncated
    JSON line becomes ``RAW``).

    **Repair of a raw newline inside a JSON string** (PROTOCOL.md §5): a line that
    starts like an object but does not parse is held; when the next line does not
    parse on its own either, the two are joined (the newline escaped, as it should
    have been) and, if that parses, they make one event. Up to
    :data:`MAX_JOINED_LINES` lines are joined; lines that never make an object
    come out as ``RAW`` events, one per line, in order. Such a line is therefore
    reported when the next line arrives (or at :meth:`close`).

    Counters: ``object_lines`` (events read from JSON objects, a repaired object
    counting once), ``raw_lines`` (non-blank lines that were not JSON objects),
    ``oversize_lines``.
    """

    __slots__ = ("_framer", "_pending", "_pending_size", "object_lines", "oversize_lines",
                 "raw_lines")

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self._framer = LineFramer(max_line_bytes)
        self._pending: list[bytes] = []
        self._pending_size = 0
        self.object_lines = 0
        self.raw_lines = 0
        self.oversize_lines = 0

    @property
    def max_line_bytes(self) -> int:
        """The line limit in force."""
        return self._framer.max_line_bytes

    def feed(self, data: bytes) -> list[AgentEvent]:
        """Take one chunk of output; return the events it completes."""
        frames = self._framer.feed(data)
        if not frames:
            return []
        out: list[AgentEvent] = []
        append = out.append
        loads = orjson.loads
        objects = 0
        for frame in frames:
            if frame.__class__ is bytes and not self._pending:
                try:
                    obj = loads(frame)
                except orjson.JSONDecodeError:
                    obj = None
                if obj.__class__ is dict:
                    objects += 1
                    if len(frame) >= SHORTEST_TOO_DEEP and exceeds_depth(obj, frame):
                        append(too_deep_event(frame))
                    else:
                        append(LineEvent(classify(obj), obj, frame))
                    continue
            out.extend(self._frame(frame))
        self.object_lines += objects
        return out

    def close(self) -> list[AgentEvent]:
        """End of input: the events of whatever was left unfinished."""
        out: list[AgentEvent] = []
        for frame in self._framer.close():
            out.extend(self._frame(frame))
        out.extend(self._flush())
        return out

    def _frame(self, frame: bytes | LineTooLong | Tail) -> list[AgentEvent]:
        if isinstance(frame, LineTooLong):
            self.oversize_lines += 1
            return [*self._flush(), error_event(
                line_too_long_text(frame.size, frame.limit),
                code="line_too_long",
                size=frame.size,
                limit=frame.limit,
            )]
        return self._line(frame.data if isinstance(frame, Tail) else frame)

    def _line(self, line: bytes) -> list[AgentEvent]:
        out: list[AgentEvent] = []
        pending = self._pending
        if pending:
            joined = _loads(b"\\n".join(pending) + b"\\n" + line)
            if type(joined) is dict:
                original = b"\n".join(pending) + b"\n" + line
                pending.clear()
                self._pending_size = 0
                self.object_lines += 1
                return [event_from_object(joined, original)]
            obj = _loads(line)
            if obj is _FAILED and len(pending) < MAX_JOINED_LINES \
                    and self._pending_size + len(line) <= self.max_line_bytes:
                pending.append(line)
                self._pending_size += len(line)
                return out
            out = self._flush()
        else:
            obj = _loads(line)
        if type(obj) is dict:
            self.object_lines += 1
            out.append(event_from_object(obj, line))
        elif obj is _FAILED and line.lstrip()[:1] == b"{":
            self._pending.append(line)  # perhaps the first part of a split object
            self._pending_size = len(line)
        else:
            self.raw_lines += 1
            out.append(raw_event(line))
        return out

    def _flush(self) -> list[AgentEvent]:
        """The held lines, as the RAW events they are."""
        if not self._pending:
            return []
        out = [raw_event(line) for line in self._pending]
        self.raw_lines += len(out)
        self._pending.clear()
        self._pending_size = 0
        return out
