"""Events: one line of agent output -> one normalized :class:`AgentEvent`.

:func:`parse_event` reads every dialect of PROTOCOL.md (current builds, 2025
builds, seed 002's ``payload`` envelope, seed 004's flat tool-call events) and
never raises: a line that is not a JSON object becomes a ``RAW`` event, an
unknown type or subtype an ``UNKNOWN`` one, both with everything they carried.

What does *not* live here: splitting bytes into lines (:mod:`.framing`),
folding a turn's events together (:mod:`.transcript`).

Example:
    >>> e = parse_event(b'{"type":"assistant","message":{"role":"assistant",'
    ...                 b'"content":[{"type":"text","text":"Hi"}]},"session_id":"s1"}')
    >>> e.type, e.text, e.session_id
    (<EventType.ASSISTANT: 'assistant'>, 'Hi', 's1')
    >>> parse_event("not json").type
    <EventType.RAW: 'raw'>
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import orjson

from .ansi import strip_ansi
from .tools import ToolCall, tool_call_from_event_data


class EventType(str, enum.Enum):
    """What an event is. Seed 004's members, plus what the protocol needs beyond them."""

    SYSTEM_INIT = "system:init"
    USER = "user"
    THINKING_DELTA = "thinking:delta"
    THINKING_COMPLETED = "thinking:completed"
    ASSISTANT = "assistant"
    """Whole text of a segment (a recap before a tool call, or the final message)."""
    ASSISTANT_DELTA = "assistant:delta"
    """A fragment of text (``--stream-partial-output``)."""
    TOOL_CALL_STARTED = "tool-call-started"
    TOOL_CALL_COMPLETED = "tool-call-completed"
    RESULT_SUCCESS = "result:success"
    RESULT_ERROR = "result:error"
    INTERACTION_QUERY = "interaction_query"
    """An approval question the CLI asked and answered itself (subtype request/response)."""
    CONNECTION = "connection"
    """The CLI lost and regained its connection (subtype reconnecting/reconnected)."""
    RETRY = "retry"
    """The CLI retries a request (subtype starting)."""
    ERROR = "error"
    """A process-level error: a failure of the run, not of a tool (seed 002)."""
    RAW = "raw"
    """A line that is not a JSON object: a banner, a warning, a truncated line."""
    UNKNOWN = "unknown"
    """A JSON object of a type or subtype this version does not know; ``data`` has it all."""


_EMPTY: dict[str, Any] = {}


@dataclass(slots=True, eq=True)
class AgentEvent:
    """One event of the agent's stream, normalized.

    Seed 004's fields: ``type``, ``raw_type`` (the wire's ``type``), ``subtype``,
    ``data`` (the complete original object, unknown fields intact), ``text``,
    ``session_id``, ``timestamp_ms``. ``line`` keeps the original line as
    received (not compared, not serialized); :attr:`raw` gives it as text.

    Example:
        >>> e = parse_event('{"type":"thinking","subtype":"delta","text":"hm"}')
        >>> AgentEvent.from_dict(e.to_dict()) == e
        True
    """

    type: EventType
    raw_type: str
    subtype: str | None
    data: dict[str, Any]
    text: str | None = None
    session_id: str | None = None
    timestamp_ms: int | None = None
    line: bytes | str | None = field(default=None, compare=False, repr=False)

    # ---- typed access ------------------------------------------------------------------

    @property
    def tool_call(self) -> ToolCall | None:
        """The tool call this event starts or completes (``None`` for other events)."""
        if self.type is EventType.TOOL_CALL_STARTED or self.type is EventType.TOOL_CALL_COMPLETED:
            return tool_call_from_event_data(self.data)
        return None

    @property
    def call_id(self) -> str | None:
        """The tool call's id, exactly as written (it may contain a newline)."""
        tc = self.tool_call
        return tc.call_id if tc is not None else None

    @property
    def model_call_id(self) -> str | None:
        """The model call that produced this text or tool call, when the wire says."""
        value = self.data.get("model_call_id")
        return value if isinstance(value, str) else None

    @property
    def usage(self) -> Usage | None:
        """Token usage of a ``result`` event, with snake_case fields."""
        return Usage.from_wire(self.data.get("usage")) if self.is_result else None

    @property
    def is_result(self) -> bool:
        """True for the terminal ``result`` events."""
        return self.type is EventType.RESULT_SUCCESS or self.type is EventType.RESULT_ERROR

    @property
    def error(self) -> str | None:
        """The message of an ``ERROR`` event or an error result."""
        if self.type is EventType.ERROR or self.type is EventType.RESULT_ERROR:
            return self.text or "the agent reported an error without a message"
        return None

    @property
    def request_id(self) -> str | None:
        """The request id (``result`` and some ``system/init`` events)."""
        value = self.data.get("request_id")
        return value if isinstance(value, str) else None

    @property
    def raw(self) -> str:
        """The original line as text (re-serialized when the event was built from a dict)."""
        line = self.line
        if isinstance(line, bytes):
            return line.decode("utf-8", "replace")
        if isinstance(line, str):
            return line
        if self.type is EventType.RAW and isinstance(self.data.get("data"), str):
            return str(self.data["data"])
        return orjson.dumps(self.data).decode()

    # ---- serialization -----------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; :meth:`from_dict` gives back an equal event."""
        return {
            "type": self.type.value,
            "raw_type": self.raw_type,
            "subtype": self.subtype,
            "data": self.data,
            "text": self.text,
            "session_id": self.session_id,
            "timestamp_ms": self.timestamp_ms,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AgentEvent:
        """Rebuild an event from :meth:`to_dict`'s output."""
        try:
            etype = EventType(d.get("type", "unknown"))
        except ValueError:
            etype = EventType.UNKNOWN
        data = d.get("data")
        return cls(
            etype,
            str(d.get("raw_type", "")),
            d.get("subtype"),
            data if isinstance(data, dict) else {},
            d.get("text"),
            d.get("session_id"),
            d.get("timestamp_ms"),
        )


@dataclass(slots=True, frozen=True)
class Usage:
    """Token usage of a turn (the ``result`` event's ``usage``, in snake_case).

    Example:
        >>> Usage.from_wire({"inputTokens": 10, "outputTokens": 2})
        Usage(input_tokens=10, output_tokens=2, cache_read_tokens=0, cache_write_tokens=0)
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @classmethod
    def from_wire(cls, value: Any) -> Usage | None:
        """Read camelCase (current builds) or snake_case usage; ``None`` when absent."""
        if not isinstance(value, dict):
            return None

        def num(*keys: str) -> int:
            for key in keys:
                v = value.get(key)
                if isinstance(v, int) and not isinstance(v, bool):
                    return v
                if isinstance(v, float):
                    return int(v)
            return 0

        return cls(
            num("inputTokens", "input_tokens"),
            num("outputTokens", "output_tokens"),
            num("cacheReadTokens", "cache_read_tokens", "cache_read_input_tokens"),
            num("cacheWriteTokens", "cache_write_tokens", "cache_creation_input_tokens"),
        )

    def to_dict(self) -> dict[str, int]:
        """``{"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"}``."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )


# ---- parsing ---------------------------------------------------------------------------


def _content_text(content: Any) -> str | None:
    """Text of a message's ``content``: a string, or text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        if len(content) == 1:  # the usual case, kept fast
            block = content[0]
            if isinstance(block, dict):
                text = block.get("text")
                if isinstance(text, str) and block.get("type", "text") == "text":
                    return text
            elif isinstance(block, str):
                return block
        parts = []
        for block in content:
            if isinstance(block, dict):
                text = block.get("text")
                if isinstance(text, str) and block.get("type", "text") == "text":
                    parts.append(text)
            elif isinstance(block, str):
                parts.append(block)
        return "".join(parts) if parts else None
    return None


def _message_text(data: dict[str, Any]) -> str | None:
    """Seed 004's text rule: ``text``, else ``message.content``, else the envelope's."""
    text = data.get("text")
    if isinstance(text, str):
        return text
    message = data.get("message")
    if isinstance(message, dict):
        return _content_text(message.get("content"))
    if isinstance(message, str):
        return message
    payload = data.get("payload")
    if isinstance(payload, dict):
        message = payload.get("message")
        if isinstance(message, dict):
            return _content_text(message.get("content"))
        for key in ("text", "content", "prompt"):
            value = payload.get(key)
            if isinstance(value, str):
                return value
            if isinstance(value, list):
                return _content_text(value)
    return None


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _session(data: dict[str, Any]) -> str | None:
    sid = data.get("session_id")
    if isinstance(sid, str):
        return sid
    payload = data.get("payload")
    if isinstance(payload, dict):
        sid = payload.get("session_id") or payload.get("sessionId")
        if isinstance(sid, str):
            return sid
    return None


def _is_error_result(data: dict[str, Any], subtype: str | None) -> bool:
    if data.get("is_error") is True:
        return True
    payload = data.get("payload")
    if isinstance(payload, dict) and payload.get("is_error") is True:
        return True
    return subtype is not None and subtype != "success" and subtype.startswith("error")


def _result_text(data: dict[str, Any], is_error: bool) -> str | None:
    if is_error:
        for source in (data, data.get("payload")):
            if isinstance(source, dict):
                for key in ("error", "result", "message"):
                    value = source.get(key)
                    if isinstance(value, str) and value:
                        return value
                    if isinstance(value, dict) and isinstance(value.get("message"), str):
                        return str(value["message"])
        return None
    value = data.get("result")
    if isinstance(value, str):
        return value
    payload = data.get("payload")
    if isinstance(payload, dict) and isinstance(payload.get("result"), str):
        return str(payload["result"])
    return None


def _classify(data: dict[str, Any], raw_type: str, subtype: str | None) -> EventType:
    if raw_type == "assistant":
        if "timestamp_ms" in data and "model_call_id" not in data:
            return EventType.ASSISTANT_DELTA
        return EventType.ASSISTANT
    if raw_type == "thinking":
        if subtype == "delta" or subtype is None:
            return EventType.THINKING_DELTA
        if subtype == "completed":
            return EventType.THINKING_COMPLETED
        return EventType.UNKNOWN
    if raw_type == "tool_call":
        if subtype == "started":
            return EventType.TOOL_CALL_STARTED
        if subtype == "completed":
            return EventType.TOOL_CALL_COMPLETED
        return EventType.UNKNOWN
    if raw_type == "user":
        return EventType.USER
    if raw_type == "system":
        return EventType.SYSTEM_INIT if subtype == "init" else EventType.UNKNOWN
    if raw_type == "result":
        if _is_error_result(data, subtype):
            return EventType.RESULT_ERROR
        return EventType.RESULT_SUCCESS if subtype in ("success", None) else EventType.UNKNOWN
    simple = _SIMPLE_TYPES.get(raw_type)
    return simple if simple is not None else EventType.UNKNOWN


_SIMPLE_TYPES: dict[str, EventType] = {
    "interaction_query": EventType.INTERACTION_QUERY,
    "tool-call-started": EventType.TOOL_CALL_STARTED,
    "tool-call-completed": EventType.TOOL_CALL_COMPLETED,
    "connection": EventType.CONNECTION,
    "retry": EventType.RETRY,
    "error": EventType.ERROR,
    "raw": EventType.RAW,
}


def _text_for(etype: EventType, data: dict[str, Any]) -> str | None:
    if etype is EventType.ASSISTANT or etype is EventType.ASSISTANT_DELTA:
        return _message_text(data)
    if etype is EventType.THINKING_DELTA or etype is EventType.USER:
        return _message_text(data)
    if etype is EventType.RESULT_SUCCESS:
        return _result_text(data, False)
    if etype is EventType.RESULT_ERROR:
        return _result_text(data, True)
    if etype is EventType.ERROR:
        msg = data.get("message") or data.get("error")
        return msg if isinstance(msg, str) else None
    if etype is EventType.RAW:
        raw = data.get("data")
        return strip_ansi(raw) if isinstance(raw, str) else None
    if etype is EventType.THINKING_COMPLETED:
        return None
    text = data.get("text")
    if isinstance(text, str):
        return text
    return None


def event_from_object(data: dict[str, Any], line: bytes | str | None = None) -> AgentEvent:
    """Build the event for an already-decoded JSON object.

    Example:
        >>> event_from_object({"type": "result", "subtype": "error", "error": "boom"}).type
        <EventType.RESULT_ERROR: 'result:error'>
    """
    t = data.get("type")
    raw_type = t if isinstance(t, str) else ("" if t is None else str(t))
    st = data.get("subtype")
    subtype = st if isinstance(st, str) or st is None else str(st)
    etype = _classify(data, raw_type, subtype)
    ts = data.get("timestamp_ms")
    if not (isinstance(ts, int) and not isinstance(ts, bool)):
        ts = _int_or_none(ts)
    sid = data.get("session_id")
    if not isinstance(sid, str):
        sid = _session(data)
    return AgentEvent(etype, raw_type, subtype, data, _text_for(etype, data), sid, ts, line)


def raw_event(line: bytes | str) -> AgentEvent:
    """The ``RAW`` event for a line that is not a JSON object.

    ``data`` is seed 002's wrapping ``{"type": "raw", "data": <the line>}``;
    ``text`` is the line with terminal escapes stripped.

    Example:
        >>> raw_event(b"\\x1b[1mWelcome\\x1b[0m").text
        'Welcome'
    """
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    return AgentEvent(
        EventType.RAW, "raw", None, {"type": "raw", "data": text}, strip_ansi(text), None, None, line
    )


def error_event(message: str, **fields: Any) -> AgentEvent:
    """An ``ERROR`` event (seed 002's ``{"type": "error", "message"}``) made by this library.

    Example:
        >>> error_event("line too long", size=9).data
        {'type': 'error', 'message': 'line too long', 'size': 9}
    """
    data: dict[str, Any] = {"type": "error", "message": message, **fields}
    return AgentEvent(EventType.ERROR, "error", None, data, message, None, None, None)


def parse_event(line: bytes | str | dict[str, Any]) -> AgentEvent:
    """Read one line (or an already-decoded object) into an :class:`AgentEvent`. Never raises.

    Example:
        >>> parse_event('{"type":"brand_new","x":1}').type
        <EventType.UNKNOWN: 'unknown'>
        >>> parse_event("[1, 2]").type
        <EventType.RAW: 'raw'>
    """
    if isinstance(line, dict):
        return event_from_object(line)
    try:
        data = orjson.loads(line)
    except (orjson.JSONDecodeError, TypeError, ValueError):
        return raw_event(line)
    if type(data) is not dict:
        return raw_event(line)
    return event_from_object(data, line)
