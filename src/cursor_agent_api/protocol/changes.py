"""Changes: what one event did to a turn, as plain immutable data.

:meth:`Transcript.add <cursor_agent_api.protocol.transcript.Transcript.add>` returns a tuple of
these. A view (a terminal, a replay, the server's stored turn state, the web page through
:meth:`to_dict`) is driven by them alone: the segment rule and the pairing of tool calls are
applied once, by the transcript, and a view only applies the results.

* Text comes in **segments**, numbered from 0 in order. :class:`TextAppended` adds text to
  segment ``segment`` (the first change naming a new index opens it); :class:`SegmentReplaced`
  sets a segment's whole text (a recap replacing the deltas already appended to it, or a whole
  message opening a new segment); :class:`SegmentClosed` says no more text goes to it. The
  turn's text is the segments joined with no separator. A segment may end up empty (a recap
  with no text replaced its deltas); a view keeps the index and shows nothing.
* Thinking comes in **blocks** the same way: :class:`ThinkingAppended`, :class:`ThinkingClosed`.
* Tool calls are numbered by their order of first appearance: ``index``, not ``call_id``
  (ids may repeat: a publisher that redacted every id). :class:`ToolCallOpened` and
  :class:`ToolCallChanged` carry a snapshot of the whole call (a copy: later events do not
  change it).
* :class:`TurnInfo` (session, request, model, cwd, prompt: the current values of all),
  :class:`UsageReported`, :class:`ErrorReported` and :class:`ResultReceived` complete the turn.

Every change has a ``kind`` (a string, also the ``"kind"`` of :meth:`to_dict`) and a
``to_dict()`` that is JSON-ready; :func:`change_from_dict` reads one back. Changes are named
tuples: immutable, and cheap to make (the fold makes one per delta, the most frequent event);
a change equals only a change of the same kind with the same fields, never a plain tuple.

Example:
    >>> from .transcript import Transcript
    >>> from .events import parse_event
    >>> t = Transcript()
    >>> t.add(parse_event('{"type":"assistant","message":{"content":[{"type":"text","text":"Hi"}]},'
    ...                   '"timestamp_ms":1}'))
    (TextAppended(segment=0, text='Hi'),)
    >>> [c.kind for c in t.add(parse_event('{"type":"assistant","message":{"content":'
    ...                                    '[{"type":"text","text":"Hi!"}]},"model_call_id":"m"}'))]
    ['segment_replaced', 'segment_closed']
    >>> TextAppended(0, "Hi").to_dict()
    {'kind': 'text_appended', 'segment': 0, 'text': 'Hi'}

    A view keeps what it shows by index, and needs no rule of its own:

    >>> t, shown = Transcript(), {}
    >>> for line in ['{"type":"assistant","text":"Hel","timestamp_ms":1}',
    ...              '{"type":"assistant","text":"lo","timestamp_ms":2}',
    ...              '{"type":"assistant","text":"Hello.","model_call_id":"m"}',
    ...              '{"type":"assistant","text":" Bye.","timestamp_ms":3}']:
    ...     for c in t.add(parse_event(line)):
    ...         if isinstance(c, TextAppended):
    ...             shown[c.segment] = shown.get(c.segment, "") + c.text
    ...         elif isinstance(c, SegmentReplaced):
    ...             shown[c.segment] = c.text
    >>> shown, "".join(shown.values()) == t.text
    ({0: 'Hello.', 1: ' Bye.'}, True)
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple

from .events import AgentEvent, EventType, Usage
from .tools import ToolCall, ToolKind, ToolStatus

__all__ = [
    "AssistantRole",
    "Change",
    "ErrorReported",
    "ResultReceived",
    "SegmentClosed",
    "SegmentReplaced",
    "TextAppended",
    "ThinkingAppended",
    "ThinkingClosed",
    "ToolCallChanged",
    "ToolCallOpened",
    "TurnInfo",
    "UsageReported",
    "assistant_role",
    "change_from_dict",
]


class AssistantRole(str, enum.Enum):
    """What an assistant event is to the text (PROTOCOL.md §3.4)."""

    DELTA = "delta"
    """A fragment of the current segment (``--stream-partial-output``)."""
    RECAP = "recap"
    """The whole text of a segment, sent before a tool call (it carries ``model_call_id``)."""
    FINAL = "final"
    """A whole message with neither marker: the final message, or a 2025 build's fragment."""


_DELTA_TYPE = EventType.ASSISTANT_DELTA
_ASSISTANT_TYPE = EventType.ASSISTANT


def assistant_role(event: AgentEvent) -> AssistantRole | None:
    """The role of an assistant event in the text; ``None`` for any other event.

    Whether an event is a delta is decided once, when the line is parsed
    (``timestamp_ms`` and no ``model_call_id``: :class:`EventType.ASSISTANT_DELTA`); this
    names the whole messages apart. Views need not call it: :class:`SegmentReplaced` carries it.

    Example:
        >>> from .events import parse_event
        >>> [assistant_role(parse_event(line)) for line in [
        ...     '{"type":"assistant","text":"He","timestamp_ms":1}',
        ...     '{"type":"assistant","text":"Hello","timestamp_ms":2,"model_call_id":"m"}',
        ...     '{"type":"assistant","text":"Hello"}',
        ...     '{"type":"user","text":"hi"}']]  # doctest: +NORMALIZE_WHITESPACE
        [<AssistantRole.DELTA: 'delta'>, <AssistantRole.RECAP: 'recap'>,
         <AssistantRole.FINAL: 'final'>, None]
    """
    etype = event.type
    if etype is _DELTA_TYPE:
        return AssistantRole.DELTA
    if etype is _ASSISTANT_TYPE:
        return AssistantRole.RECAP if "model_call_id" in event.data else AssistantRole.FINAL
    return None


# ---- text ---------------------------------------------------------------------------------


class TextAppended(NamedTuple):
    """``text`` (never empty) was appended to segment ``segment``; a new index opens it."""

    segment: int
    text: str

    @property
    def kind(self) -> str:
        """``"text_appended"``."""
        return "text_appended"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"kind": self.kind, "segment": self.segment, "text": self.text}


class SegmentReplaced(NamedTuple):
    """Segment ``segment``'s whole text is now ``text``.

    A recap replacing the deltas already appended to it, or (a new index) a whole message
    opening a segment; ``role`` says which message it was. A :class:`SegmentClosed` follows.
    A view that printed the deltas as they came need not print anything.
    """

    segment: int
    text: str
    role: AssistantRole

    @property
    def kind(self) -> str:
        """``"segment_replaced"``."""
        return "segment_replaced"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"kind": self.kind, "segment": self.segment, "text": self.text,
                "role": self.role.value}


class SegmentClosed(NamedTuple):
    """No more text goes to segment ``segment`` (a tool call, a whole message or the result)."""

    segment: int

    @property
    def kind(self) -> str:
        """``"segment_closed"``."""
        return "segment_closed"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"kind": self.kind, "segment": self.segment}


# ---- thinking -----------------------------------------------------------------------------


class ThinkingAppended(NamedTuple):
    """``text`` (never empty) was appended to thinking block ``block``; a new index opens it."""

    block: int
    text: str

    @property
    def kind(self) -> str:
        """``"thinking_appended"``."""
        return "thinking_appended"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"kind": self.kind, "block": self.block, "text": self.text}


class ThinkingClosed(NamedTuple):
    """Thinking block ``block`` is complete."""

    block: int

    @property
    def kind(self) -> str:
        """``"thinking_closed"``."""
        return "thinking_closed"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"kind": self.kind, "block": self.block}


# ---- tool calls ---------------------------------------------------------------------------


class ToolCallOpened(NamedTuple):
    """A new tool call, the ``index``-th of the turn (from 0); ``call`` is a snapshot of it."""

    index: int  # type: ignore[assignment]  # shadows tuple.index, on purpose
    call: ToolCall

    @property
    def kind(self) -> str:
        """``"tool_call_opened"``."""
        return "tool_call_opened"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the call as :meth:`ToolCall.to_dict` gives it (output included)."""
        return {"kind": self.kind, "index": self.index, "call": self.call.to_dict()}


class ToolCallChanged(NamedTuple):
    """Tool call ``index`` changed (completed, abandoned, args recovered): its whole new state."""

    index: int  # type: ignore[assignment]  # shadows tuple.index, on purpose
    call: ToolCall

    @property
    def kind(self) -> str:
        """``"tool_call_changed"``."""
        return "tool_call_changed"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the call as :meth:`ToolCall.to_dict` gives it (output included)."""
        return {"kind": self.kind, "index": self.index, "call": self.call.to_dict()}


# ---- the turn -----------------------------------------------------------------------------


class TurnInfo(NamedTuple):
    """What is known about the turn changed; every field is the current value."""

    session_id: str | None
    request_id: str | None
    model: str | None
    cwd: str | None
    prompt: str | None

    @property
    def kind(self) -> str:
        """``"turn_info"``."""
        return "turn_info"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"kind": self.kind, "session_id": self.session_id, "request_id": self.request_id,
                "model": self.model, "cwd": self.cwd, "prompt": self.prompt}


class UsageReported(NamedTuple):
    """The turn's token usage (from the result)."""

    usage: Usage

    @property
    def kind(self) -> str:
        """``"usage_reported"``."""
        return "usage_reported"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"kind": self.kind, "usage": self.usage.to_dict()}


class ErrorReported(NamedTuple):
    """An error message: an ``error`` event, or the text of an error result."""

    message: str

    @property
    def kind(self) -> str:
        """``"error_reported"``."""
        return "error_reported"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"kind": self.kind, "message": self.message}


class ResultReceived(NamedTuple):
    """The turn's (first, authoritative) result event.

    ``result`` is ``result.result`` as sent (``None`` when absent); ``error`` the error
    result's message. The segment, thinking and running calls it closed come before it.
    """

    success: bool
    result: str | None
    error: str | None
    duration_ms: int | None
    duration_api_ms: int | None

    @property
    def kind(self) -> str:
        """``"result_received"``."""
        return "result_received"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"kind": self.kind, "success": self.success, "result": self.result,
                "error": self.error, "duration_ms": self.duration_ms,
                "duration_api_ms": self.duration_api_ms}


Change = (
    TextAppended
    | SegmentReplaced
    | SegmentClosed
    | ThinkingAppended
    | ThinkingClosed
    | ToolCallOpened
    | ToolCallChanged
    | TurnInfo
    | UsageReported
    | ErrorReported
    | ResultReceived
)
"""Any change :meth:`Transcript.add` returns."""


def _eq(self: tuple[Any, ...], other: object) -> bool:
    return self.__class__ is other.__class__ and tuple.__eq__(self, other)


def _ne(self: tuple[Any, ...], other: object) -> bool:
    return not _eq(self, other)


def _hash(self: tuple[Any, ...]) -> int:
    return hash((self.__class__.__name__, *self))


for _cls in (TextAppended, SegmentReplaced, SegmentClosed, ThinkingAppended, ThinkingClosed,
             ToolCallOpened, ToolCallChanged, TurnInfo, UsageReported, ErrorReported, ResultReceived):
    # a named tuple compares as a plain tuple: TextAppended(0, "a") would equal
    # ThinkingAppended(0, "a") and (0, "a"). Set here, as a NamedTuple body only takes fields.
    setattr(_cls, "__eq__", _eq)  # noqa: B010
    setattr(_cls, "__ne__", _ne)  # noqa: B010
    setattr(_cls, "__hash__", _hash)  # noqa: B010
del _cls


# ---- reading back -------------------------------------------------------------------------


def _opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) else None


def _call_from_dict(d: dict[str, Any]) -> ToolCall:
    # The derived fields of ToolCall.to_dict (output, exit_code, duration_ms) are recomputed;
    # the duration the tool reported is not a field of the dict, so it is kept as duration_ms
    # only when the call's clock does not give it.
    call = ToolCall(
        call_id=d["call_id"],
        kind=ToolKind(d["kind"]),
        name=d.get("name") or "",
        args=d.get("args") or {},
        status=ToolStatus(d["status"]),
        result=d.get("result"),
        description=d.get("description"),
        model_call_id=d.get("model_call_id"),
        started_at_ms=_opt_int(d.get("started_at_ms")),
        completed_at_ms=_opt_int(d.get("completed_at_ms")),
    )
    duration = _opt_int(d.get("duration_ms"))
    if duration is not None and call.duration_ms != duration:
        call.reported_duration_ms = duration
    return call


def change_from_dict(d: dict[str, Any]) -> Change:
    """The change a :meth:`to_dict` gave (``ValueError`` for an unknown or malformed one).

    Example:
        >>> change_from_dict({"kind": "segment_closed", "segment": 2})
        SegmentClosed(segment=2)
        >>> change_from_dict({"kind": "nope"})
        Traceback (most recent call last):
        ...
        ValueError: not a change: unknown kind 'nope'
    """
    kind = d.get("kind")
    try:
        if kind == "text_appended":
            return TextAppended(int(d["segment"]), str(d["text"]))
        if kind == "segment_replaced":
            return SegmentReplaced(int(d["segment"]), str(d["text"]), AssistantRole(d["role"]))
        if kind == "segment_closed":
            return SegmentClosed(int(d["segment"]))
        if kind == "thinking_appended":
            return ThinkingAppended(int(d["block"]), str(d["text"]))
        if kind == "thinking_closed":
            return ThinkingClosed(int(d["block"]))
        if kind == "tool_call_opened":
            return ToolCallOpened(int(d["index"]), _call_from_dict(d["call"]))
        if kind == "tool_call_changed":
            return ToolCallChanged(int(d["index"]), _call_from_dict(d["call"]))
        if kind == "turn_info":
            return TurnInfo(d.get("session_id"), d.get("request_id"), d.get("model"),
                            d.get("cwd"), d.get("prompt"))
        if kind == "usage_reported":
            usage = Usage.from_wire(d["usage"])
            if usage is None:
                raise ValueError("no usage")
            return UsageReported(usage)
        if kind == "error_reported":
            return ErrorReported(str(d["message"]))
        if kind == "result_received":
            return ResultReceived(bool(d["success"]), d.get("result"), d.get("error"),
                                  _opt_int(d.get("duration_ms")),
                                  _opt_int(d.get("duration_api_ms")))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"not a change: malformed {kind!r} ({exc!r})") from None
    raise ValueError(f"not a change: unknown kind {kind!r}")
