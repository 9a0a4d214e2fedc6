"""Transcript: one turn's events folded into its text, tool calls, usage and result.

The assistant text follows the segment rule of PROTOCOL.md §3.4, which
reproduces ``result.result`` exactly on every real recording:

* a delta (``timestamp_ms``, no ``model_call_id``) is appended to the current segment;
* a tool call closes the segment (its deltas are kept);
* a whole-segment message (a recap with ``model_call_id``, or a final message
  with neither marker) *replaces* the current segment's deltas when there were
  any, and is appended as new text otherwise; one with no text (no text block, or
  an empty one) replaces nothing: it closes the segment, its deltas kept;
* thinking does not close a segment; segments are joined with no separator.

So partial output never doubles the text, and 2025 builds' plain fragments are
concatenated. Tool calls are paired by ``call_id``; an id may be reused (a publisher that
redacted every id to ``<redacted>``), so a ``started`` for an id whose call has completed, or an
event naming another tool than the running call of that id, opens a new call.

This is the one fold of a turn: :meth:`Transcript.add` returns what the event changed (see
:mod:`.changes`), so a view applies those changes and never the rule or the pairing again.
The first result event is the turn's outcome and ends the fold: an event after it (an agent
that wrote past its result, a second result) is kept in :attr:`Transcript.events` and changes
nothing.

Example:
    >>> t = Transcript()
    >>> for line in [
    ...     '{"type":"assistant","message":{"content":[{"type":"text","text":"Hel"}]},"timestamp_ms":1}',
    ...     '{"type":"assistant","message":{"content":[{"type":"text","text":"lo"}]},"timestamp_ms":2}',
    ...     '{"type":"assistant","message":{"content":[{"type":"text","text":"Hello"}]}}',
    ... ]:
    ...     changes = t.add(parse_event(line))
    >>> t.text, t.segments
    ('Hello', ['Hello'])
    >>> [c.to_dict() for c in changes][0]  # the last event: a final message replacing the deltas
    {'kind': 'segment_replaced', 'segment': 0, 'text': 'Hello', 'role': 'final'}
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

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
)
from .event_log import EventLog
from .events import AgentEvent, EventType, Usage, parse_event
from .framing import DEFAULT_MAX_LINE_BYTES
from .limits import wire_int
from .reader import EventReader
from .result import AgentResult
from .tools import QUERY_KINDS, ToolCall, ToolKind, ToolStatus

__all__ = ["Changes", "Transcript", "parse_event"]

Changes = tuple[Change, ...]
"""What :meth:`Transcript.add` returns: the changes of one event, in order (often none)."""
_NONE: Changes = ()
_new = tuple.__new__
"""Makes a change without its named tuple's Python-level ``__new__``: ~100 ns less per change."""

# Enum attribute access costs ~100 ns on CPython 3.10/3.11: the hot path uses a constant.
_DELTA = EventType.ASSISTANT_DELTA
_THINKING = EventType.THINKING_DELTA
_DELTA_CHUNK = 4096
"""Deltas of one segment joined into one string at a time (bounds a long segment's memory)."""
_UNKNOWN_KIND = ToolKind.UNKNOWN
_FUNCTION_KIND = ToolKind.FUNCTION
_RUNNING = ToolStatus.RUNNING
_STARTED = EventType.TOOL_CALL_STARTED


class Transcript:
    """Fold the events of one turn. Feed with :meth:`add`; read the fields at any time.

    ``keep_events`` keeps every event in :attr:`events` (the default), an
    :class:`~.event_log.EventLog`: each event the reader decoded from its line is kept as
    that line and built again when read.
    ``keep_content=False`` keeps no content: the assistant text, the thinking blocks and the
    tool calls' results are not kept (:attr:`text` and :attr:`thinking` stay empty, each
    call's ``result`` is ``None``), while the changes :meth:`add` returns still carry them
    and everything else (segments' count, calls' kinds, arguments and statuses, usage,
    the result event) is kept: for a consumer that stores the events itself and must not
    hold a second copy of big outputs. Fields:
    ``session_id`` (from the first event that carries one), ``request_id``,
    ``model`` and ``cwd`` (from ``system/init``), ``prompt`` (the user echo),
    ``duration_ms``/``duration_api_ms``, ``usage``, ``result_event``,
    ``errors`` (messages of ``ERROR`` events and error results).

    Example:
        >>> t = Transcript.from_lines([
        ...     '{"type":"tool_call","subtype":"started","call_id":"c1",'
        ...     '"tool_call":{"lsToolCall":{"args":{"path":"."}}}}'])
        >>> [c.kind for c in t.close()]
        ['tool_call_changed']
        >>> t.tool_calls[0].status
        <ToolStatus.ABANDONED: 'abandoned'>
        >>> lean = Transcript(keep_content=False)
        >>> changes = lean.add(parse_event('{"type":"assistant","text":"big"}'))
        >>> changes[0].text, lean.text, lean.segments
        ('big', '', [''])
    """

    MAX_ATTRIBUTES = 29
    """An instance has at most this many attributes: past it CPython (3.11) stops sharing the
    keys of its ``__dict__`` and every attribute read on the hot path gets slower (7% of the
    fold, measured with a 30th). tests/protocol/test_transcript.py checks it."""

    def __init__(self, *, keep_events: bool = True, keep_content: bool = True) -> None:
        self.keep_events = keep_events
        self.keep_content = keep_content
        self.events = EventLog()
        self.session_id: str | None = None
        self.request_id: str | None = None
        self.model: str | None = None
        self.cwd: str | None = None
        self.prompt: str | None = None
        self.duration_ms: int | None = None
        self.duration_api_ms: int | None = None
        self.usage: Usage | None = None
        self.result_event: AgentEvent | None = None
        self.errors: list[str] = []
        self.event_count = 0
        self.object_lines = 0
        self.raw_lines = 0
        self._segments: list[str] = []
        self._deltas: list[str] = []
        self._delta_chunks = 0  # leading entries of _deltas that are joined chunks
        self._delta_limit = _DELTA_CHUNK
        self._thinking: list[str] = []
        self._thinking_blocks: list[str] = []
        self._calls: list[ToolCall] = []
        self._by_id: dict[str, list[ToolCall]] = {}  # every call of an id, in order
        self._running: dict[str, list[ToolCall]] = {}  # the running calls of an id, in order
        self._index: dict[int, int] = {}  # id() of each call -> its index in _calls
        self._queries: dict[str, tuple[ToolKind, dict[str, Any]]] = {}
        self._folding = False  # a session id is known and no result came yet
        self.link_local: Callable[[ToolCall], Any] | None = None
        """Set by a client with its own tools: called once for each completed MCP call of its
        tool server; what it returns becomes ``call.local`` (see :mod:`cursor_agent_api.tools`)."""

    # ---- reading -----------------------------------------------------------------------

    @classmethod
    def from_lines(cls, lines: Iterable[bytes | str], *, keep_events: bool = True) -> Transcript:
        """A closed-over-nothing transcript of these lines (call :meth:`close` to end it)."""
        t = cls(keep_events=keep_events)
        for line in lines:
            if isinstance(line, bytes):
                if not line.strip():
                    continue
            elif not line.strip():
                continue
            event = parse_event(line)
            if event.type is EventType.RAW:
                t.raw_lines += 1
            else:
                t.object_lines += 1
            t.add(event)
        return t

    @classmethod
    def from_chunks(
        cls,
        chunks: Iterable[bytes],
        *,
        keep_events: bool = True,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> Transcript:
        """The transcript of a whole stream given as chunks of bytes (any sizes), closed.

        ``object_lines`` and ``raw_lines`` count what the stream held.

        Example:
            >>> Transcript.from_chunks([b'{"type":"assistant","text":"h', b'i"}\\n']).text
            'hi'
        """
        t = cls(keep_events=keep_events)
        reader = EventReader(max_line_bytes)
        add = t.add
        for chunk in chunks:
            for event in reader.feed(chunk):
                add(event)
        for event in reader.close():
            add(event)
        t.object_lines = reader.object_lines
        t.raw_lines = reader.raw_lines
        t.close()
        return t

    @classmethod
    def from_bytes(
        cls,
        data: bytes,
        *,
        keep_events: bool = True,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> Transcript:
        """The transcript of a whole recording given as bytes, closed."""
        return cls.from_chunks([data], keep_events=keep_events, max_line_bytes=max_line_bytes)

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        *,
        keep_events: bool = True,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> Transcript:
        """Read a recording (NDJSON as written by ``agent --print --output-format stream-json``).

        Raises ``OSError`` when the file cannot be read.

        Example:
            >>> import tempfile, pathlib
            >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.ndjson"
            >>> _ = p.write_text('{"type":"result","subtype":"success","result":"ok"}\\n')
            >>> Transcript.from_file(p).to_result().result
            'ok'
        """
        with open(path, "rb") as f:
            return cls.from_chunks(iter(lambda: f.read(1 << 20), b""), keep_events=keep_events,
                                   max_line_bytes=max_line_bytes)

    # ---- folding -----------------------------------------------------------------------

    def add(self, event: AgentEvent) -> Changes:
        """Fold one event in; return what it changed (see :mod:`.changes`), in order.

        Folding only these changes into a view gives :attr:`text`, :attr:`segments`,
        :attr:`thinking` and :attr:`tool_calls` exactly.
        """
        self.event_count += 1
        if self.keep_events:
            self.events.append(event)
        etype = event.type
        if self._folding:  # a session id is known and no result came yet: the hot paths
            if etype is _DELTA:  # the most frequent event, kept fast
                text = event.text
                if not text:
                    return _NONE
                deltas = self._deltas
                deltas.append(text if self.keep_content else "")
                if len(deltas) >= self._delta_limit:
                    self._compact_deltas()
                return (_new(TextAppended, (len(self._segments), text)),)
            if etype is _THINKING:  # as frequent, with thinking on
                text = event.text
                if not text:
                    return _NONE
                self._thinking.append(text if self.keep_content else "")
                return (_new(ThinkingAppended, (len(self._thinking_blocks), text)),)
        elif self.result_event is not None:
            # Past the turn's (first) result: kept in events, not folded; but an error this
            # library reports (no line of the agent's: a line too long, the exit, a timeout)
            # decides the outcome, so it is.
            if etype is EventType.ERROR and event.line is None:
                return self._on_error(event)
            return _NONE
        handler = _HANDLERS.get(etype)
        if self.session_id is None:
            session_id = event.session_id
            if session_id is not None:
                self.session_id = session_id
                self._folding = True  # until a result (which may be this event)
                changes = _NONE if handler is None else handler(self, event)
                if changes and changes[0].__class__ is TurnInfo:
                    return changes  # system/init or user: the TurnInfo has the session id
                return (self._info(), *changes)
        if handler is None:
            return _NONE
        return handler(self, event)

    def _info(self) -> TurnInfo:
        return _new(TurnInfo, (self.session_id, self.request_id, self.model, self.cwd, self.prompt))

    def _snapshot(self, call: ToolCall) -> ToolCallChanged:
        return _new(ToolCallChanged, (self._index[id(call)], call.copy()))

    def _compact_deltas(self) -> None:
        """Join a long segment's newest deltas into one string (memory: the text's own size).

        The leading ``_delta_chunks`` entries are already joined chunks; each call joins
        what came after them, so every delta is copied once.
        """
        deltas = self._deltas
        n = self._delta_chunks
        joined = "".join(deltas[n:])
        del deltas[n:]
        deltas.append(joined)
        self._delta_chunks = n + 1
        self._delta_limit = n + 1 + _DELTA_CHUNK

    def _clear_deltas(self) -> None:
        self._deltas.clear()
        self._delta_chunks = 0
        self._delta_limit = _DELTA_CHUNK

    def _on_delta(self, event: AgentEvent) -> Changes:
        # A delta before any session id (the hot path in add() is for the others).
        text = event.text
        if not text:
            return _NONE
        self._deltas.append(text if self.keep_content else "")
        if len(self._deltas) >= self._delta_limit:
            self._compact_deltas()
        return (_new(TextAppended, (len(self._segments), text)),)

    def _on_assistant(self, event: AgentEvent) -> Changes:
        text = event.text
        if not text:
            # No text to replace the deltas with (no text block, or an empty one): the deltas
            # are the segment's only copy, and result.result has them. It ends the segment.
            closed = self._close_segment()
            return _NONE if closed is None else (closed,)
        segment = len(self._segments)
        self._clear_deltas()  # the recap replaces the segment's deltas, if any
        self._segments.append(text if self.keep_content else "")
        role = assistant_role(event) or AssistantRole.FINAL
        return (_new(SegmentReplaced, (segment, text, role)), _new(SegmentClosed, (segment,)))

    def _on_thinking(self, event: AgentEvent) -> Changes:
        text = event.text
        if not text:
            return _NONE
        self._thinking.append(text if self.keep_content else "")
        return (_new(ThinkingAppended, (len(self._thinking_blocks), text)),)

    def _on_thinking_completed(self, event: AgentEvent) -> Changes:
        closed = self._end_thinking()
        return _NONE if closed is None else (closed,)

    def _on_tool_call(self, event: AgentEvent) -> Changes:
        closed = self._close_segment()
        change = self._add_tool_call(event)
        if closed is None:
            return _NONE if change is None else (change,)
        return (closed,) if change is None else (closed, change)

    def _on_init(self, event: AgentEvent) -> Changes:
        before = (self.model, self.cwd, self.request_id)
        data = event.data
        model = data.get("model")
        self.model = model if isinstance(model, str) else self.model
        cwd = data.get("cwd") or data.get("workspace")
        self.cwd = cwd if isinstance(cwd, str) else self.cwd
        self.request_id = self.request_id or event.request_id
        if (self.model, self.cwd, self.request_id) != before:
            return (self._info(),)
        return _NONE

    def _on_user(self, event: AgentEvent) -> Changes:
        if self.prompt is None:
            self.prompt = event.text
            if self.prompt is not None:
                return (self._info(),)
        return _NONE

    def _on_error(self, event: AgentEvent) -> Changes:
        text = event.text
        if not text:
            return _NONE
        self.errors.append(text)
        return (_new(ErrorReported, (text,)),)

    def _close_segment(self) -> SegmentClosed | None:
        if not self._deltas:
            return None
        closed = _new(SegmentClosed, (len(self._segments),))
        self._segments.append("".join(self._deltas))
        self._clear_deltas()
        return closed

    def _end_thinking(self) -> ThinkingClosed | None:
        if not self._thinking:
            return None
        closed = _new(ThinkingClosed, (len(self._thinking_blocks),))
        self._thinking_blocks.append("".join(self._thinking))
        self._thinking.clear()
        return closed

    def _add_tool_call(self, event: AgentEvent) -> ToolCallOpened | ToolCallChanged | None:
        tc = event.tool_call
        if tc is None:
            return None
        call_id = tc.call_id
        same = self._by_id.get(call_id)
        running: list[ToolCall] | None = None
        if same is None:
            existing = None
        else:
            # an id's running calls are tracked apart once it has two calls (a reused id)
            running = same if len(same) == 1 else self._running.get(call_id)
            existing = _pair(same[-1], running, tc, event.type is _STARTED)
        if existing is None:
            if not self.keep_content:
                tc = tc.copy()  # the event's own call keeps its result
            index = len(self._calls)
            self._index[id(tc)] = index
            self._calls.append(tc)
            if same is None:
                self._by_id[call_id] = [tc]
            elif running is same:  # the id's second call: its running calls from now on
                same.append(tc)
                self._running[call_id] = [c for c in same if c.status is _RUNNING]
            else:
                same.append(tc)
                if tc.status is _RUNNING:
                    if running is None:
                        self._running[call_id] = [tc]
                    else:
                        running.append(tc)
            if self._queries and (not tc.args or tc.kind is _UNKNOWN_KIND):
                self._recover(tc)
            if self.link_local is not None:
                self._link(tc)
            opened = _new(ToolCallOpened, (index, tc.copy()))
            if not self.keep_content:
                tc.result = None
            return opened
        existing.update(tc)
        if running and running is not same and existing.status is not _RUNNING:
            for i, call in enumerate(running):  # a call never runs again once it has ended
                if call is existing:
                    del running[i]
                    break
        if self._queries and (not existing.args or existing.kind is _UNKNOWN_KIND):
            self._recover(existing)
        if self.link_local is not None:
            self._link(existing)
        snapshot = self._snapshot(existing)
        if not self.keep_content:
            existing.result = None
        return snapshot

    def _link(self, call: ToolCall) -> None:
        if call.local is None and call.status is not _RUNNING and call.is_own_tool \
                and self.link_local is not None:
            call.local = self.link_local(call)

    def _recover(self, call: ToolCall) -> None:
        query = self._queries.get(call.call_id)
        if query is not None:
            self._recover_from_query(call, query)

    def _recover_from_query(self, call: ToolCall, query: tuple[ToolKind, dict[str, Any]]) -> bool:
        """Fill what ``call`` lacks from its approval query; whether anything changed."""
        kind, args = query
        if kind is not call.kind and _UNKNOWN_KIND not in (kind, call.kind):
            return False  # a reused id: the query is about another call
        changed = False
        if not call.args and args:
            call.args = args
            changed = True
        if call.kind is ToolKind.UNKNOWN and not call.name and kind is not call.kind:
            call.kind = kind
            changed = True
        return changed

    def _add_query(self, event: AgentEvent) -> Changes:
        if event.subtype != "request":
            return _NONE
        data = event.data
        qtype = data.get("query_type")
        query = data.get("query")
        if not isinstance(qtype, str) or not isinstance(query, dict):
            return _NONE
        inner = query.get(qtype)
        if not isinstance(inner, dict):
            return _NONE
        args = inner.get("args")
        args = args if isinstance(args, dict) else {}
        call_id = args.get("toolCallId") or inner.get("toolCallId")
        if not isinstance(call_id, str):
            return _NONE
        entry = (QUERY_KINDS.get(qtype, ToolKind.UNKNOWN), args)
        self._queries[call_id] = entry
        same = self._by_id.get(call_id)
        if same is not None and self._recover_from_query(same[-1], entry):
            return (self._snapshot(same[-1]),)
        return _NONE

    def _add_result(self, event: AgentEvent) -> Changes:
        self.result_event = event  # the turn's outcome: add() folds nothing after it
        self._folding = False
        data = event.data
        request_id = self.request_id
        self.request_id = event.request_id or self.request_id
        self.duration_ms = wire_int(data.get("duration_ms"))  # not a bool, nor 1e23
        self.duration_api_ms = wire_int(data.get("duration_api_ms"))
        self.usage = event.usage
        error: str | None = None
        if event.type is EventType.RESULT_ERROR:
            error = event.text or "the agent reported an error"
            if event.text:
                self.errors.append(event.text)
        changes: list[Change] = []
        segment = self._close_segment()
        if segment is not None:
            changes.append(segment)
        thinking = self._end_thinking()
        if thinking is not None:
            changes.append(thinking)
        changes.extend(self._abandon_open_calls())
        if self.request_id != request_id:
            changes.append(self._info())
        if self.usage is not None:
            changes.append(_new(UsageReported, (self.usage,)))
        if event.type is EventType.RESULT_ERROR and event.text:
            changes.append(_new(ErrorReported, (event.text,)))
        changes.append(_new(ResultReceived, (self.success, self.result_text, error,
                                             self.duration_ms, self.duration_api_ms)))
        return tuple(changes)

    def _abandon_open_calls(self) -> list[ToolCallChanged]:
        for running in self._running.values():
            running.clear()
        abandoned = []
        for call in self._calls:
            if call.status is _RUNNING:
                call.status = ToolStatus.ABANDONED
                abandoned.append(self._snapshot(call))
        return abandoned

    def close(self) -> Changes:
        """The stream ended: calls with no completion become ``abandoned``. Idempotent.

        Returns what that changed (the thinking block closed, the calls abandoned); an open
        segment of deltas stays open, as :attr:`text` does not depend on it.
        :meth:`to_result` closes too, but drops these changes: call this first to see them.
        """
        thinking = self._end_thinking()
        abandoned = self._abandon_open_calls()
        if thinking is None:
            return tuple(abandoned) if abandoned else _NONE
        return (thinking, *abandoned)

    # ---- what it holds -----------------------------------------------------------------

    @property
    def text(self) -> str:
        """The assistant text, reassembled by the segment rule (never copied from the result)."""
        if self._deltas:
            return "".join(self._segments) + "".join(self._deltas)
        return "".join(self._segments)

    @property
    def segments(self) -> list[str]:
        """The text's segments, in order (the open one last); :attr:`text` is them joined.

        A recap with no text does not replace its segment's deltas: it closes the segment.

        Example:
            >>> t = Transcript.from_lines(['{"type":"assistant","text":"a"}',
            ...                            '{"type":"assistant","text":"b","timestamp_ms":1}'])
            >>> t.segments, t.text
            (['a', 'b'], 'ab')
        """
        if self._deltas:
            return [*self._segments, "".join(self._deltas)]
        return list(self._segments)

    @property
    def result_text(self) -> str | None:
        """``result.result`` of the result event, if one arrived."""
        if self.result_event is None:
            return None
        value = self.result_event.data.get("result")
        return value if isinstance(value, str) else None

    @property
    def thinking(self) -> list[str]:
        """The thinking blocks, each a ``delta``…``completed`` run joined."""
        if self._thinking:
            return [*self._thinking_blocks, "".join(self._thinking)]
        return list(self._thinking_blocks)

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls, in the order they first appeared."""
        return list(self._calls)

    def tool_call(self, call_id: str) -> ToolCall | None:
        """The tool call with this id, if any; the latest one when the id was reused.

        Example:
            >>> t = Transcript.from_lines([
            ...     '{"type":"tool_call","subtype":"started","call_id":"c1",'
            ...     '"tool_call":{"lsToolCall":{"args":{"path":"."}}}}'])
            >>> t.tool_call("c1").kind, t.tool_call("c2")
            (<ToolKind.LS: 'ls'>, None)
        """
        same = self._by_id.get(call_id)
        return same[-1] if same else None

    @property
    def success(self) -> bool:
        """True only once a successful result event was read."""
        return self.result_event is not None and self.result_event.type is EventType.RESULT_SUCCESS

    @property
    def finished(self) -> bool:
        """True once a result event arrived."""
        return self.result_event is not None

    def to_result(self) -> AgentResult:
        """The :class:`AgentResult` of the turn so far (closes the transcript).

        ``result`` is ``result.result`` when a result arrived, else the reassembled text.
        """
        self.close()
        text = self.text
        result_text = self.result_text
        error: str | None = None
        if self.result_event is not None and self.result_event.type is EventType.RESULT_ERROR:
            error = self.result_event.text or "the agent reported an error"
        elif self.result_event is None:
            error = self.errors[-1] if self.errors else "the stream ended without a result"
        return AgentResult(
            success=self.success,
            result=result_text if result_text is not None else text,
            session_id=self.session_id,
            request_id=self.request_id,
            duration_ms=self.duration_ms,
            duration_api_ms=self.duration_api_ms,
            error=error,
            events=self.events.copy() if self.keep_events else [],
            text=text,
            tool_calls=[tc.copy() for tc in self._calls],
            usage=self.usage,
            model=self.model,
        )


def _same_tool(call: ToolCall, later: ToolCall) -> bool:
    """Whether ``later`` can be an event of ``call``: the same kind (and, for a generic
    ``function``, the same name), or a kind one of them does not tell."""
    if call.kind is _UNKNOWN_KIND or later.kind is _UNKNOWN_KIND:
        return True
    if call.kind is not later.kind:
        return False
    return call.kind is not _FUNCTION_KIND or not call.name or not later.name or call.name == later.name


def _pair(latest: ToolCall, running: list[ToolCall] | None, tc: ToolCall,
          started: bool) -> ToolCall | None:
    """The call that ``tc`` continues, or ``None`` when ``tc`` opens a new call. ``latest``
    is the newest call of ``tc``'s id; ``running`` the calls of that id still running, in order.

    A ``started`` continues only a running call of the same tool: once a call has completed,
    a ``started`` with its id is another call. A completion goes to the first running call of
    the same tool; with none running it repeats the latest call's completion when it is the
    same tool, and is a call of its own (completed without ``started``) otherwise. Only the
    running calls are looked at, so that an id every call shares (``<redacted>``) costs no
    more than distinct ids.

    Example:
        >>> from .tools import tool_call_from_event_data as read
        >>> def ev(sub, key):
        ...     return read({"type": "tool_call", "subtype": sub, "call_id": "x",
        ...                  "tool_call": {key: {"result": {"success": {}}} if sub == "completed" else {}}})
        >>> shell = ev("started", "shellToolCall")
        >>> _pair(shell, [shell], ev("completed", "shellToolCall"), False) is shell
        True
        >>> shell.status = ToolStatus.SUCCEEDED
        >>> _pair(shell, None, ev("started", "readToolCall"), True) is None
        True
    """
    if started:
        return latest if latest.status is _RUNNING and _same_tool(latest, tc) else None
    if running:
        for call in running:
            if call.status is _RUNNING and _same_tool(call, tc):
                return call
    return latest if _same_tool(latest, tc) else None


_HANDLERS: dict[EventType, Callable[[Transcript, AgentEvent], Changes]] = {
    EventType.ASSISTANT_DELTA: Transcript._on_delta,
    EventType.ASSISTANT: Transcript._on_assistant,
    EventType.THINKING_DELTA: Transcript._on_thinking,
    EventType.THINKING_COMPLETED: Transcript._on_thinking_completed,
    EventType.TOOL_CALL_STARTED: Transcript._on_tool_call,
    EventType.TOOL_CALL_COMPLETED: Transcript._on_tool_call,
    EventType.INTERACTION_QUERY: Transcript._add_query,
    EventType.SYSTEM_INIT: Transcript._on_init,
    EventType.USER: Transcript._on_user,
    EventType.RESULT_SUCCESS: Transcript._add_result,
    EventType.RESULT_ERROR: Transcript._add_result,
    EventType.ERROR: Transcript._on_error,
}
