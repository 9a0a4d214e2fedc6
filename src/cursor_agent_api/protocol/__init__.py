"""The protocol core, sans-I/O: bytes -> lines -> events -> a turn's transcript.

Nothing here touches a process, a socket or a thread. This is the only package
that knows the wire's dialects; everything else sees normalized
:class:`AgentEvent`, :class:`ToolCall` and :class:`AgentResult` objects.

Its names are imported on first use (PEP 562), as the package's: a program that needs one
part (the simulator writes events; it never folds a transcript) does not pay for the others
at start-up.

Example:
    >>> from cursor_agent_api.protocol import EventReader, Transcript
    >>> reader = EventReader()
    >>> t = Transcript()
    >>> for e in reader.feed(b'{"type":"result","subtype":"success","result":"hi"}\\n'):
    ...     changes = t.add(e)
    >>> [c.kind for c in changes]
    ['result_received']
    >>> t.to_result().result
    'hi'
"""

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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

# name -> the module that defines it, for ``__getattr__`` below
_HOMES = {
    "AgentEvent": ".events",
    "AgentResult": ".result",
    "AssistantRole": ".changes",
    "Change": ".changes",
    "Changes": ".transcript",
    "DEFAULT_MAX_LINE_BYTES": ".framing",
    "ErrorReported": ".changes",
    "EventLog": ".event_log",
    "EventReader": ".reader",
    "EventType": ".events",
    "LineFramer": ".framing",
    "LineTooLong": ".framing",
    "MAX_JSON_DEPTH": ".limits",
    "ResultReceived": ".changes",
    "SegmentClosed": ".changes",
    "SegmentReplaced": ".changes",
    "Tail": ".framing",
    "TextAppended": ".changes",
    "ThinkingAppended": ".changes",
    "ThinkingClosed": ".changes",
    "ToolCall": ".tools",
    "ToolCallChanged": ".changes",
    "ToolCallOpened": ".changes",
    "ToolKind": ".tools",
    "ToolStatus": ".tools",
    "Transcript": ".transcript",
    "TurnInfo": ".changes",
    "Usage": ".events",
    "UsageReported": ".changes",
    "assistant_role": ".changes",
    "change_from_dict": ".changes",
    "error_event": ".events",
    "event_from_object": ".events",
    "kind_for_key": ".tools",
    "parse_event": ".events",
    "raw_event": ".events",
    "status_for_result": ".tools",
    "strip_ansi": ".ansi",
}


def __getattr__(name: str) -> object:
    """The public name ``name``, imported from its module on first use (then kept).

    Example:
        >>> import cursor_agent_api.protocol as protocol
        >>> protocol.EventType.USER.value
        'user'
        >>> protocol.Transcript is protocol.transcript.Transcript
        True
    """
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(home, __name__), name)
    globals()[name] = value
    return value
