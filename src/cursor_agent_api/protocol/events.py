"""Events: one line of agent output -> one normalized :class:`AgentEvent`.

:func:`parse_event` reads every dialect of docs/protocol.md (current builds, 2025
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
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from .ansi import json_text, strip_ansi
from .limits import MAX_JSON_DEPTH, SHORTEST_TOO_DEEP, exceeds_depth, wire_int
from .surrogates import loads_repaired
from .tools import ToolCall, tool_call_from_event_data

if TYPE_CHECKING:
    from ..errors import CursorAgentError


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


_UNSET: Any = object()

# Enum attribute access costs ~100 ns on CPython 3.10/3.11: hot paths use these constants.
_ASSISTANT = EventType.ASSISTANT
_ASSISTANT_DELTA = EventType.ASSISTANT_DELTA
_STARTED = EventType.TOOL_CALL_STARTED
_COMPLETED = EventType.TOOL_CALL_COMPLETED
_THINKING_DELTA = EventType.THINKING_DELTA
_THINKING_COMPLETED = EventType.THINKING_COMPLETED
_RESULT_SUCCESS = EventType.RESULT_SUCCESS
_RESULT_ERROR = EventType.RESULT_ERROR
_UNKNOWN = EventType.UNKNOWN


class AgentEvent:
    """One event of the agent's stream, normalized.

    Seed 004's fields: ``type``, ``raw_type`` (the wire's ``type``), ``subtype``,
    ``data`` (the complete original object, unknown fields intact), ``text``,
    ``session_id``, ``timestamp_ms``. Everything but ``type`` is read from
    ``data`` when first asked for (``text`` is then kept), so parsing a line
    costs little more than decoding it. ``line`` keeps the original line as
    received (not compared, not serialized); :attr:`raw` gives it as text.

    **Tool calls: read** :attr:`tool_call`, **not** ``data``. On ``TOOL_CALL_STARTED`` and
    ``TOOL_CALL_COMPLETED`` events, ``event.tool_call`` is a
    :class:`~cursor_agent_api.protocol.tools.ToolCall` read from whichever dialect the line
    came in: ``.kind`` (a ``ToolKind``: ``SHELL``, ``READ``, ``EDIT``…), ``.name``,
    ``.status`` (a ``ToolStatus``), ``.exit_code``, ``.output`` (the text to show),
    ``.stdout``, ``.command``, ``.path``, ``.args``, ``.result``, ``.duration_ms``,
    ``.error_message``; ``event.call_id`` is its id. Seed 004's examples read
    ``data["tool_name"]`` and ``data["result"]["exit_code"]``, its own flat dialect, which
    the CLI never writes: on real runs they are ``None``. docs/client.md, "Coming from seed
    004", maps each of those reads to the typed one.

    Example:
        >>> e = parse_event('{"type":"thinking","subtype":"delta","text":"hm","session_id":"s"}')
        >>> e.type, e.raw_type, e.subtype, e.text, e.session_id
        (<EventType.THINKING_DELTA: 'thinking:delta'>, 'thinking', 'delta', 'hm', 's')
        >>> AgentEvent.from_dict(e.to_dict()) == e
        True

        A shell call's completion, as the CLI writes it:

        >>> done = parse_event(
        ...     '{"type":"tool_call","subtype":"completed","call_id":"c1","tool_call":'
        ...     '{"shellToolCall":{"args":{"command":"ls"},"result":{"success":'
        ...     '{"exitCode":0,"stdout":"a.txt\\\\n","stderr":""}}}}}')
        >>> done.data.get("tool_name"), done.data.get("result")    # seed 004's reads
        (None, None)
        >>> call = done.tool_call
        >>> call.kind, call.status, call.command, call.exit_code, call.output
        (<ToolKind.SHELL: 'shell'>, <ToolStatus.SUCCEEDED: 'succeeded'>, 'ls', 0, 'a.txt\\n')
    """

    __slots__ = ("_text", "data", "line", "type")

    def __init__(
        self,
        type: EventType,
        data: dict[str, Any],
        line: bytes | str | None = None,
        *,
        text: str | None = _UNSET,
    ) -> None:
        self.type = type
        self.data = data
        self.line = line
        self._text = text

    # ---- seed 004's fields ---------------------------------------------------------------

    @property
    def text(self) -> str | None:
        """The text this event carries: assistant or thinking text, the result, a message."""
        text = self._text
        if text is _UNSET:
            text = self._text = _TEXT_READERS.get(self.type, _no_text)(self.data)
        return text

    @property
    def raw_type(self) -> str:
        """The wire's ``type`` field, as written."""
        t = self.data.get("type")
        return t if isinstance(t, str) else ("" if t is None else str(t))

    @property
    def subtype(self) -> str | None:
        """The wire's ``subtype`` field, if any."""
        st = self.data.get("subtype")
        return st if isinstance(st, str) or st is None else str(st)

    @property
    def session_id(self) -> str | None:
        """The agent's chat id, when this event carries one."""
        sid = self.data.get("session_id")
        return sid if isinstance(sid, str) else _session(self.data)

    @property
    def transport(self) -> str:
        """The transport the event came from: ``"acp"`` for events mapped from Cursor's ACP
        mode (``data["transport"]``), ``"stream-json"`` for print mode's lines."""
        t = self.data.get("transport")
        return t if isinstance(t, str) else "stream-json"

    @property
    def timestamp_ms(self) -> int | None:
        """The event's timestamp in milliseconds, when it carries one."""
        return wire_int(self.data.get("timestamp_ms"))

    # ---- typed access ------------------------------------------------------------------

    @property
    def tool_call(self) -> ToolCall | None:
        """The tool call this event starts or completes (``None`` for other events): its
        ``kind``, ``status``, ``exit_code``, ``output``, ``args``…, whatever the dialect."""
        if self.type is _STARTED or self.type is _COMPLETED:
            return tool_call_from_event_data(self.data)
        return None

    @property
    def call_id(self) -> str | None:
        """The tool call's id, exactly as written (it may contain a newline)."""
        if self.type is _STARTED or self.type is _COMPLETED:
            call_id = self.data.get("call_id")
            if isinstance(call_id, str):
                return call_id
            tc = self.tool_call
            return tc.call_id if tc is not None else None
        return None

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
        return self.type is _RESULT_SUCCESS or self.type is _RESULT_ERROR

    @property
    def error(self) -> str | None:
        """The message of an ``ERROR`` event or an error result."""
        if self.type is EventType.ERROR or self.type is EventType.RESULT_ERROR:
            return self.text or "the agent reported an error without a message"
        return None

    @property
    def exception(self) -> CursorAgentError | None:
        """The typed error of a ``RESULT_ERROR`` the client added because the agent wrote
        no result (``data["added_by_client"]`` is then true); ``None`` for every other event."""
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
        return json_text(self.data)

    # ---- comparison, serialization -------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AgentEvent):
            return NotImplemented
        return self.type is other.type and self.data == other.data and self.text == other.text

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        # (pickle, copy, deepcopy) a text not yet read is rebuilt unread: the "unread" marker
        # is this module's object, which a copy of it would not be
        text = self._text
        if text is _UNSET:
            return (self.__class__, (self.type, self.data, self.line))
        return (_with_text, (self.__class__, self.type, self.data, self.line, text))

    def __repr__(self) -> str:
        return (
            f"AgentEvent(type={self.type!s}, raw_type={self.raw_type!r}, "
            f"subtype={self.subtype!r}, text={self.text!r}, session_id={self.session_id!r})"
        )

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
        text = d.get("text", _UNSET)
        return cls(etype, data if isinstance(data, dict) else {}, text=text)


def _with_text(cls: type[AgentEvent], type: EventType, data: dict[str, Any],
               line: bytes | str | None, text: str | None) -> AgentEvent:
    """An event with its text given (how :meth:`AgentEvent.__reduce__` rebuilds one)."""
    return cls(type, data, line, text=text)


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

        def num(*keys: str) -> int:  # the first key with a count (see limits.wire_int)
            for key in keys:
                v = wire_int(value.get(key))
                if v is not None:
                    return v
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
    if not isinstance(content, list):
        return None
    parts = []
    for block in content:
        if isinstance(block, dict):
            text = block.get("text")
            if isinstance(text, str) and block.get("type", "text") == "text":
                parts.append(text)
        elif isinstance(block, str):
            parts.append(block)
    return "".join(parts) if parts else None


def _message_text(data: dict[str, Any]) -> str | None:
    """Seed 004's text rule: ``text``, else ``message.content``, else the envelope's."""
    message = data.get("message")
    if message.__class__ is dict:
        # Fast path for the shape every current build writes: one text block.
        content = message.get("content")
        if content.__class__ is list and len(content) == 1:
            block = content[0]
            if block.__class__ is dict and block.get("type") == "text":
                text = block.get("text")
                if text.__class__ is str and "text" not in data:
                    return text
    text = data.get("text")
    if isinstance(text, str):
        return text
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


def _session(data: dict[str, Any]) -> str | None:
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


# ---- the event type of each wire type ----------------------------------------------------


def _type_assistant(data: dict[str, Any], subtype: Any) -> EventType:
    if "timestamp_ms" in data and "model_call_id" not in data:
        return _ASSISTANT_DELTA
    return _ASSISTANT


def _type_thinking(data: dict[str, Any], subtype: Any) -> EventType:
    if subtype == "delta" or subtype is None:
        return _THINKING_DELTA
    if subtype == "completed":
        return _THINKING_COMPLETED
    return _UNKNOWN


def _type_tool_call(data: dict[str, Any], subtype: Any) -> EventType:
    if subtype == "started":
        return _STARTED
    if subtype == "completed":
        return _COMPLETED
    return _UNKNOWN


def _type_system(data: dict[str, Any], subtype: Any) -> EventType:
    return EventType.SYSTEM_INIT if subtype == "init" else EventType.UNKNOWN


def _type_result(data: dict[str, Any], subtype: Any) -> EventType:
    if not isinstance(subtype, str) and subtype is not None:
        subtype = str(subtype)
    if _is_error_result(data, subtype):
        return EventType.RESULT_ERROR
    if subtype == "success" or subtype is None:
        return EventType.RESULT_SUCCESS
    return EventType.UNKNOWN


_FIXED_TYPES: dict[str, EventType] = {
    "user": EventType.USER,
    "interaction_query": EventType.INTERACTION_QUERY,
    "tool-call-started": EventType.TOOL_CALL_STARTED,
    "tool-call-completed": EventType.TOOL_CALL_COMPLETED,
    "connection": EventType.CONNECTION,
    "retry": EventType.RETRY,
    "error": EventType.ERROR,
    "raw": EventType.RAW,
}

_TYPE_READERS: dict[str, Callable[[dict[str, Any], Any], EventType]] = {
    "assistant": _type_assistant,
    "thinking": _type_thinking,
    "tool_call": _type_tool_call,
    "system": _type_system,
    "result": _type_result,
}


# ---- the text of each event type -------------------------------------------------------


def _no_text(data: dict[str, Any]) -> str | None:
    return None


def _text_field(data: dict[str, Any]) -> str | None:
    text = data.get("text")
    return text if isinstance(text, str) else None


def _thinking_text(data: dict[str, Any]) -> str | None:
    text = data.get("text")
    return text if isinstance(text, str) else _message_text(data)


def _error_text(data: dict[str, Any]) -> str | None:
    msg = data.get("message") or data.get("error")
    return msg if isinstance(msg, str) else None


def _raw_text(data: dict[str, Any]) -> str | None:
    raw = data.get("data")
    return strip_ansi(raw) if isinstance(raw, str) else None


_TEXT_READERS: dict[EventType, Callable[[dict[str, Any]], str | None]] = {
    EventType.ASSISTANT: _message_text,
    EventType.ASSISTANT_DELTA: _message_text,
    EventType.USER: _message_text,
    EventType.THINKING_DELTA: _thinking_text,
    EventType.THINKING_COMPLETED: _no_text,
    EventType.RESULT_SUCCESS: lambda data: _result_text(data, False),
    EventType.RESULT_ERROR: lambda data: _result_text(data, True),
    EventType.ERROR: _error_text,
    EventType.RAW: _raw_text,
    EventType.TOOL_CALL_STARTED: _text_field,
    EventType.TOOL_CALL_COMPLETED: _text_field,
    EventType.INTERACTION_QUERY: _text_field,
    EventType.CONNECTION: _text_field,
    EventType.RETRY: _text_field,
    EventType.SYSTEM_INIT: _no_text,
    EventType.UNKNOWN: _text_field,
}


def classify(data: dict[str, Any]) -> EventType:
    """The :class:`EventType` of a decoded wire object.

    Example:
        >>> classify({"type": "assistant", "text": "x", "timestamp_ms": 1})
        <EventType.ASSISTANT_DELTA: 'assistant:delta'>
    """
    raw_type = data.get("type")
    if raw_type == "assistant":  # the most frequent line, kept fast
        if "timestamp_ms" in data and "model_call_id" not in data:
            return _ASSISTANT_DELTA
        return _ASSISTANT
    if raw_type.__class__ is not str:
        return _UNKNOWN
    fixed = _FIXED_TYPES.get(raw_type)
    if fixed is not None:
        return fixed
    reader = _TYPE_READERS.get(raw_type)
    if reader is None:
        return _UNKNOWN
    return reader(data, data.get("subtype"))


class LineEvent(AgentEvent):
    """An event whose ``data`` is its ``line`` decoded as is: what the reader builds for
    nearly every line (not a line joined to the next, nor one too deep).

    Nothing else differs from :class:`AgentEvent`: it is one so that a turn that keeps its
    events may keep such an event as its line alone and build it again when it is read (see
    :mod:`.event_log`), which only holds when ``data`` came from the line unchanged.

    Example:
        >>> e = parse_event(b'{"type":"user"}')
        >>> type(e).__name__, e == AgentEvent(EventType.USER, {"type": "user"})
        ('LineEvent', True)
    """

    __slots__ = ()


def event_from_object(data: dict[str, Any], line: bytes | str | None = None) -> AgentEvent:
    """Build the event for an already-decoded JSON object.

    Example:
        >>> event_from_object({"type": "result", "subtype": "error", "error": "boom"}).type
        <EventType.RESULT_ERROR: 'result:error'>
    """
    if line is not None and len(line) >= SHORTEST_TOO_DEEP and exceeds_depth(data, line):
        return too_deep_event(line)
    return AgentEvent(classify(data), data, line)


def raw_event(line: bytes | str) -> AgentEvent:
    """The ``RAW`` event for a line that is not a JSON object.

    ``data`` is seed 002's wrapping ``{"type": "raw", "data": <the line>}``;
    ``text`` is the line with terminal escapes stripped.

    Example:
        >>> raw_event(b"\\x1b[1mWelcome\\x1b[0m").text
        'Welcome'
    """
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    return AgentEvent(EventType.RAW, {"type": "raw", "data": text}, line)


def too_deep_event(line: bytes | str) -> AgentEvent:
    """The ``RAW`` event for a JSON object nested deeper than :data:`.limits.MAX_JSON_DEPTH`.

    Its ``data`` has ``code: "too_deep"`` and the ``limit``; the line is kept as it came.

    Example:
        >>> e = parse_event("[" * 300 + "]" * 300)
        >>> e.type, parse_event('{"a":' + "[" * 300 + "]" * 300 + "}").data["code"]
        (<EventType.RAW: 'raw'>, 'too_deep')
    """
    event = raw_event(line)
    event.data["code"] = "too_deep"
    event.data["limit"] = MAX_JSON_DEPTH
    return event


def error_event(message: str, **fields: Any) -> AgentEvent:
    """An ``ERROR`` event (seed 002's ``{"type": "error", "message"}``) made by this library.

    Example:
        >>> error_event("line too long", size=9).data
        {'type': 'error', 'message': 'line too long', 'size': 9}
    """
    data: dict[str, Any] = {"type": "error", "message": message, **fields}
    return AgentEvent(EventType.ERROR, data)


def parse_event(line: bytes | str | dict[str, Any]) -> AgentEvent:
    """Read one line (or an already-decoded object) into an :class:`AgentEvent`. Never raises.

    Example:
        >>> parse_event('{"type":"brand_new","x":1}').type
        <EventType.UNKNOWN: 'unknown'>
        >>> parse_event("[1, 2]").type
        <EventType.RAW: 'raw'>
    """
    if line.__class__ is dict:
        return AgentEvent(classify(line), line)
    if isinstance(line, dict):
        return event_from_object(line)
    try:
        data = orjson.loads(line)
    except (orjson.JSONDecodeError, TypeError, ValueError):
        if not isinstance(line, (bytes, str)):
            return raw_event(repr(line))
        data = loads_repaired(line)  # not UTF-8, or Node's lone "\\ud83d" (see .surrogates)
        if data.__class__ is not dict:
            return raw_event(line)
        return event_from_object(data, line)  # not a LineEvent: data is not the line as is
    if data.__class__ is not dict:
        return raw_event(line)
    if len(line) >= SHORTEST_TOO_DEEP and exceeds_depth(data, line):
        return too_deep_event(line)
    return LineEvent(classify(data), data, line)
