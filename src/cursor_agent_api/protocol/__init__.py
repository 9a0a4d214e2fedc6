"""The protocol core, sans-I/O: bytes -> lines -> events -> a turn's transcript.

Nothing here touches a process, a socket or a thread. This is the only package
that knows the wire's dialects; everything else sees normalized
:class:`AgentEvent`, :class:`ToolCall` and :class:`AgentResult` objects.

Example:
    >>> reader = EventReader()
    >>> t = Transcript()
    >>> for e in reader.feed(b'{"type":"result","subtype":"success","result":"hi"}\\n'):
    ...     changes = t.add(e)
    >>> [c.kind for c in changes]
    ['result_received']
    >>> t.to_result().result
    'hi'
"""

from .ansi import strip_ansi
from .changes import (
    AssistantRole,
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
    assistant_role,
    change_from_dict,
)
from .event_log import EventLog
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
from .transcript import Changes, Transcript

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "MAX_JSON_DEPTH",
    "AgentEvent",
    "AgentResult",
    "AssistantRole",
    "Change",
    "Changes",
    "ErrorReported",
    "EventLog",
    "EventReader",
    "EventType",
    "LineFramer",
    "LineTooLong",
    "ResultReceived",
    "SegmentClosed",
    "SegmentReplaced",
    "Tail",
    "TextAppended",
    "ThinkingAppended",
    "ThinkingClosed",
    "ToolCall",
    "ToolCallChanged",
    "ToolCallOpened",
    "ToolKind",
    "ToolStatus",
    "Transcript",
    "TurnInfo",
    "Usage",
    "UsageReported",
    "assistant_role",
    "change_from_dict",
    "error_event",
    "event_from_object",
    "kind_for_key",
    "parse_event",
    "raw_event",
    "status_for_result",
    "strip_ansi",
]
