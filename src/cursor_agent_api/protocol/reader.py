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

from .events import AgentEvent, classify, error_event, event_from_object, raw_event
from .framing import DEFAULT_MAX_LINE_BYTES, LineFramer, LineTooLong, Tail


class EventReader:
    """Feed bytes, get :class:`AgentEvent` objects; counts what it read.

    A line over ``max_line_bytes`` becomes an ``ERROR`` event with
    ``data["code"] == "line_too_long"`` (its bytes are dropped as they arrive);
    the unfinished tail at :meth:`close` is parsed like any line (a truncated
    JSON line becomes ``RAW``).

    Counters: ``object_lines`` (lines that were JSON objects), ``raw_lines``
    (non-blank lines that were not), ``oversize_lines``.
    """

    __slots__ = ("_framer", "object_lines", "oversize_lines", "raw_lines")

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self._framer = LineFramer(max_line_bytes)
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
            if frame.__class__ is bytes:
                try:
                    obj = loads(frame)
                except orjson.JSONDecodeError:
                    obj = None
                if obj.__class__ is dict:
                    objects += 1
                    append(AgentEvent(classify(obj), obj, frame))
                    continue
            append(self._event(frame))
        self.object_lines += objects
        return out

    def close(self) -> list[AgentEvent]:
        """End of input: the events of whatever was left unfinished."""
        return [self._event(f) for f in self._framer.close()]

    def _event(self, frame: bytes | LineTooLong | Tail) -> AgentEvent:
        if isinstance(frame, LineTooLong):
            self.oversize_lines += 1
            return error_event(
                f"a line of {frame.size} bytes exceeded max_line_bytes={frame.limit}; "
                "it was dropped (raise max_line_bytes to keep such lines)",
                code="line_too_long",
                size=frame.size,
                limit=frame.limit,
            )
        line = frame.data if isinstance(frame, Tail) else frame
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError:
            data = None
        if type(data) is dict:
            self.object_lines += 1
            return event_from_object(data, line)
        self.raw_lines += 1
        return raw_event(line)
