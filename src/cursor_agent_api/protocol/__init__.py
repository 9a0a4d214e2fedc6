"""The protocol core, sans-I/O: bytes -> lines -> events -> a turn's transcript.

Nothing here touches a process, a socket or a thread. This is the only package
that knows the wire's dialects; everything else sees normalized
:class:`AgentEvent`, :class:`ToolCall` and :class:`AgentResult` objects.

Example:
    >>> reader = EventReader()
    >>> t = Transcript()
    >>> for e in reader.feed(b'{"type":"result","subtype":"success","result":"hi"}\\n'):
    ...     t.add(e)
    >>> t.to_result().result
    'hi'
"""

from .ansi import strip_ansi
from .events import (
    AgentEvent,
    EventType,
    Usage,
    error_event,
    event_from_object,
    parse_event,
    raw_event,
)
from .framing import DEFAULT_MAX_LINE_BYTES, LineFramer, LineTooLong, Tail
from .limits import MAX_JSON_DEPTH
from .reader import EventReader
from .result import AgentResult
from .tools import ToolCall, ToolKind, ToolStatus, kind_for_key, status_for_result
from .transcript import Transcript

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "MAX_JSON_DEPTH",
    "AgentEvent",
    "AgentResult",
    "EventReader",
    "EventType",
    "LineFramer",
    "LineTooLong",
    "Tail",
    "ToolCall",
    "ToolKind",
    "ToolStatus",
    "Transcript",
    "Usage",
    "error_event",
    "event_from_object",
    "kind_for_key",
    "parse_event",
    "raw_event",
    "status_for_result",
    "strip_ansi",
]
