"""Transcript.add returns what changed; those changes alone rebuild the transcript.

A tiny reference view folds only the changes (never the events) and must equal the
transcript's text, segments, thinking, tool calls, errors, usage, turn info and result after
every event, on every real recording (ids redacted too), and on generated sequences. The
view also checks the changes' own promises: indexes never skip, nothing is appended to a
closed segment, a replaced segment is the open one or a new one. The same changes, through
``to_dict`` -> JSON -> ``change_from_dict``, drive a second view to the same state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cursor_agent_api import Transcript, parse_event
from cursor_agent_api.protocol import (
    AgentEvent,
    AssistantRole,
    Change,
    ErrorReported,
    EventReader,
    ResultReceived,
    SegmentClosed,
    SegmentReplaced,
    TextAppended,
    ThinkingAppended,
    ThinkingClosed,
    ToolCall,
    ToolCallChanged,
    ToolCallOpened,
    ToolStatus,
    TurnInfo,
    Usage,
    UsageReported,
    assistant_role,
    change_from_dict,
)

DATA = Path(__file__).parent.parent / "data" / "cursor-real"
RECORDINGS = sorted(DATA.glob("*.ndjson")) + sorted((DATA / "fragments").glob("*.ndjson"))
LINES = [line for p in RECORDINGS for line in p.read_bytes().splitlines() if line.strip()]


class View:
    """What a view keeps, built from changes alone (no segment rule, no pairing)."""

    def __init__(self) -> None:
        self.segments: list[str] = []
        self.closed: set[int] = set()
        self.thinking: list[str] = []
        self.thinking_closed: set[int] = set()
        self.calls: list[ToolCall] = []
        self.info: TurnInfo | None = None
        self.usage: Usage | None = None
        self.errors: list[str] = []
        self.result: ResultReceived | None = None

    def apply(self, c: Change) -> None:
        if isinstance(c, TextAppended):
            assert c.text
            self._open(self.segments, self.closed, c.segment)
            self.segments[c.segment] += c.text
        elif isinstance(c, SegmentReplaced):
            self._open(self.segments, self.closed, c.segment)
            assert c.role in (AssistantRole.RECAP, AssistantRole.FINAL)
            self.segments[c.segment] = c.text
        elif isinstance(c, SegmentClosed):
            assert c.segment == len(self.segments) - 1 and c.segment not in self.closed
            self.closed.add(c.segment)
        elif isinstance(c, ThinkingAppended):
            assert c.text
            self._open(self.thinking, self.thinking_closed, c.block)
            self.thinking[c.block] += c.text
        elif isinstance(c, ThinkingClosed):
            assert c.block == len(self.thinking) - 1 and c.block not in self.thinking_closed
            self.thinking_closed.add(c.block)
        elif isinstance(c, ToolCallOpened):
            assert c.index == len(self.calls)
            self.calls.append(c.call)
        elif isinstance(c, ToolCallChanged):
            assert 0 <= c.index < len(self.calls)
            self.calls[c.index] = c.call
        elif isinstance(c, TurnInfo):
            self.info = c
        elif isinstance(c, UsageReported):
            self.usage = c.usage
        elif isinstance(c, ErrorReported):
            self.errors.append(c.message)
        elif isinstance(c, ResultReceived):
            assert self.result is None  # the first result is authoritative
            self.result = c
        else:  # pragma: no cover - a new kind of change this view does not know
            raise AssertionError(c)

    @staticmethod
    def _open(parts: list[str], closed: set[int], index: int) -> None:
        """A new index opens the next part (the previous one is closed); else it is the open one."""
        if index == len(parts):
            assert not parts or index - 1 in closed
            parts.append("")
        else:
            assert index == len(parts) - 1 and index not in closed


def _calls(calls: list[ToolCall]) -> list[dict[str, Any]]:
    return [c.to_dict() for c in calls]


def check(view: View, t: Transcript, *, exact_calls: bool = True) -> None:
    assert "".join(view.segments) == t.text
    assert view.segments == t.segments
    assert view.thinking == t.thinking
    if exact_calls:
        assert view.calls == t.tool_calls  # every field, compared as dataclasses
    assert _calls(view.calls) == _calls(t.tool_calls)
    assert view.errors == t.errors
    assert view.usage == t.usage
    info = view.info or TurnInfo(None, None, None, None, None)
    assert (info.session_id, info.request_id, info.model, info.cwd, info.prompt) == (
        t.session_id, t.request_id, t.model, t.cwd, t.prompt)
    if t.result_event is None:
        assert view.result is None
    else:
        assert view.result is not None
        assert view.result.success == t.success
        assert view.result.result == t.result_text
        assert (view.result.duration_ms, view.result.duration_api_ms) == (
            t.duration_ms, t.duration_api_ms)
        error = None if t.success else t.result_event.text or "the agent reported an error"
        assert view.result.error == error  # as AgentResult.error (to_result would close t)


def through_json(c: Change) -> Change:
    return change_from_dict(orjson.loads(orjson.dumps(c.to_dict())))


def fold(events: list[AgentEvent], *, close: bool = True) -> tuple[Transcript, View, View]:
    """Fold the events, checking the views against the transcript after every event."""
    t = Transcript()
    view, wire_view = View(), View()
    for event in events:
        changes = t.add(event)
        assert isinstance(changes, tuple)
        for c in changes:
            view.apply(c)
            wire_view.apply(through_json(c))
        check(view, t)
        check(wire_view, t, exact_calls=False)
    if close:
        for c in t.close():
            view.apply(c)
            wire_view.apply(through_json(c))
        assert all(c.status is not ToolStatus.RUNNING for c in view.calls)
    check(view, t)
    check(wire_view, t, exact_calls=False)
    return t, view, wire_view


# ---- the real recordings ---------------------------------------------------------------------

_ID_KEYS = frozenset({"call_id", "model_call_id", "session_id", "request_id", "toolCallId", "id"})


def _redact(value: object) -> object:
    if isinstance(value, dict):
        return {k: "<redacted>" if k in _ID_KEYS and isinstance(v, str) else _redact(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v) for v in value]
    return value


def _events(data: bytes) -> list[AgentEvent]:
    reader = EventReader()
    return [*reader.feed(data), *reader.close()]


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_changes_rebuild_every_real_recording(path: Path) -> None:
    t, view, _ = fold(_events(path.read_bytes()))
    result = t.to_result()
    assert "".join(view.segments) == result.text
    assert view.calls == result.tool_calls
    if t.result_text is not None and view.result is not None:
        assert view.result.result == result.result


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_changes_rebuild_every_real_recording_with_ids_redacted(path: Path) -> None:
    lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    data = b"".join(orjson.dumps(_redact(orjson.loads(line))) + b"\n" for line in lines)
    t, view, _ = fold(_events(data))
    assert view.calls == t.tool_calls


def test_a_tool_call_is_named_by_its_index_when_ids_repeat() -> None:
    lines = [
        '{"type":"tool_call","subtype":"started","call_id":"x","tool_call":{"readToolCall":{"args":{"path":"a"}}}}',
        '{"type":"tool_call","subtype":"completed","call_id":"x","tool_call":{"readToolCall":{"result":{"success":{}}}}}',
        '{"type":"tool_call","subtype":"started","call_id":"x","tool_call":{"readToolCall":{"args":{"path":"b"}}}}',
        '{"type":"tool_call","subtype":"completed","call_id":"x","tool_call":{"readToolCall":{"result":{"success":{}}}}}',
    ]
    t = Transcript()
    changes = [c for line in lines for c in t.add(parse_event(line))]
    assert [(c.kind, getattr(c, "index", None)) for c in changes] == [
        ("tool_call_opened", 0), ("tool_call_changed", 0),
        ("tool_call_opened", 1), ("tool_call_changed", 1)]
    assert [c.call.path for c in changes if isinstance(c, ToolCallChanged)] == ["a", "b"]


def test_a_change_is_a_snapshot() -> None:
    t = Transcript()
    (opened,) = t.add(parse_event(
        '{"type":"tool_call","subtype":"started","call_id":"c","tool_call":{"lsToolCall":{"args":{}}}}'))
    assert isinstance(opened, ToolCallOpened)
    t.close()
    assert opened.call.status is ToolStatus.RUNNING
    assert t.tool_calls[0].status is ToolStatus.ABANDONED
    with pytest.raises(AttributeError):
        opened.index = 3  # type: ignore[misc]


def test_segment_changes_of_partial_output_recap_and_tool_call() -> None:
    def a(text: str, **markers: object) -> AgentEvent:
        return parse_event({"type": "assistant", "message": {"content": [{"type": "text", "text": text}]},
                            **markers})

    t = Transcript()
    got = [
        t.add(a("Hel", timestamp_ms=1)),
        t.add(a("lo", timestamp_ms=2)),
        t.add(a("Hello.", timestamp_ms=3, model_call_id="m")),
        t.add(a("Fin", timestamp_ms=4)),
        t.add(parse_event('{"type":"tool_call","subtype":"started","call_id":"c",'
                          '"tool_call":{"lsToolCall":{"args":{}}}}'))[0:1],
        t.add(a("Done")),
    ]
    assert [[c.to_dict() for c in changes] for changes in got] == [
        [{"kind": "text_appended", "segment": 0, "text": "Hel"}],
        [{"kind": "text_appended", "segment": 0, "text": "lo"}],
        [{"kind": "segment_replaced", "segment": 0, "text": "Hello.", "role": "recap"},
         {"kind": "segment_closed", "segment": 0}],
        [{"kind": "text_appended", "segment": 1, "text": "Fin"}],
        [{"kind": "segment_closed", "segment": 1}],
        [{"kind": "segment_replaced", "segment": 2, "text": "Done", "role": "final"},
         {"kind": "segment_closed", "segment": 2}],
    ]
    assert t.segments == ["Hello.", "Fin", "Done"]


@pytest.mark.parametrize("textless", [
    '{"type":"assistant","message":{"content":[]},"model_call_id":"m"}',  # a recap, no block
    '{"type":"assistant","message":{"content":[{"type":"text","text":""}]}}',  # a final, empty
    '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t"}]}}',
])
def test_a_recap_with_no_text_closes_its_segment_and_keeps_the_deltas(textless: str) -> None:
    # the deltas are the segment's only copy (result.result has them): nothing replaces them
    t = Transcript()
    t.add(parse_event('{"type":"assistant","text":"draft","timestamp_ms":1}'))
    changes = t.add(parse_event(textless))
    assert [c.to_dict() for c in changes] == [{"kind": "segment_closed", "segment": 0}]
    assert t.text == "draft" and t.segments == ["draft"]
    assert [c.to_dict() for c in t.add(parse_event('{"type":"assistant","text":"x","timestamp_ms":2}'))] == [
        {"kind": "text_appended", "segment": 1, "text": "x"}]
    t.add(parse_event('{"type":"result","subtype":"success","result":"draftx"}'))
    result = t.to_result()
    assert result.text == result.result == "draftx"
    assert Transcript().add(parse_event(textless)) == ()  # no deltas: nothing to close


def test_result_changes_close_what_is_open_then_report() -> None:
    t = Transcript()
    t.add(parse_event('{"type":"thinking","subtype":"delta","text":"hm"}'))
    t.add(parse_event('{"type":"assistant","text":"partial","timestamp_ms":1}'))
    t.add(parse_event('{"type":"tool_call","subtype":"started","call_id":"c",'
                      '"tool_call":{"lsToolCall":{"args":{}}}}'))
    t.add(parse_event('{"type":"assistant","text":"more","timestamp_ms":2}'))
    changes = t.add(parse_event('{"type":"result","subtype":"error","is_error":true,"result":"bad",'
                                '"request_id":"r","duration_ms":5,"usage":{"inputTokens":3}}'))
    assert [c.kind for c in changes] == [
        "segment_closed", "thinking_closed", "tool_call_changed", "turn_info", "usage_reported",
        "error_reported", "result_received"]
    assert changes[-1] == ResultReceived(False, "bad", "bad", 5, None)
    assert t.add(parse_event('{"type":"result","subtype":"success","result":"again"}')) == ()
    assert t.close() == ()


def test_turn_info_carries_every_current_value() -> None:
    t = Transcript()
    (info,) = t.add(parse_event('{"type":"system","subtype":"init","session_id":"s","model":"m",'
                                '"cwd":"/w","request_id":"r"}'))
    assert info == TurnInfo("s", "r", "m", "/w", None)
    (info,) = t.add(parse_event('{"type":"user","message":{"content":[{"type":"text","text":"hi"}]}}'))
    assert info == TurnInfo("s", "r", "m", "/w", "hi")
    assert t.add(parse_event('{"type":"user","message":{"content":[{"type":"text","text":"2"}]}}')) == ()


def test_assistant_role() -> None:
    def role(line: str) -> AssistantRole | None:
        return assistant_role(parse_event(line))

    assert role('{"type":"assistant","text":"a","timestamp_ms":1}') is AssistantRole.DELTA
    assert role('{"type":"assistant","text":"a","timestamp_ms":1,"model_call_id":"m"}') is AssistantRole.RECAP
    assert role('{"type":"assistant","text":"a","model_call_id":"m"}') is AssistantRole.RECAP
    assert role('{"type":"assistant","text":"a"}') is AssistantRole.FINAL
    assert role('{"type":"thinking","text":"a"}') is None


@pytest.mark.parametrize("bad", [
    {}, {"kind": "text_appended"}, {"kind": "segment_replaced", "segment": 0, "text": "", "role": "x"},
    {"kind": "tool_call_opened", "index": 0, "call": {"call_id": "c", "kind": "nope", "status": "running"}},
    {"kind": "usage_reported", "usage": None}, {"kind": "tool_call_changed", "index": 0, "call": None},
])
def test_change_from_dict_rejects_malformed_input_with_a_clear_error(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"^not a change: "):
        change_from_dict(bad)


# ---- generated sequences ---------------------------------------------------------------------

texts = st.text(alphabet="ab \n", max_size=4)
ids = st.sampled_from(["a", "b", "<redacted>"])
tool_keys = st.sampled_from(["readToolCall", "shellToolCall", "webFetchToolCall", "function", "nope"])
outcomes: st.SearchStrategy[dict[str, object] | None] = st.sampled_from([
    None, {"success": {}}, {"rejected": {"reason": "no"}}, {"error": {}}])
markers = st.fixed_dictionaries({}, optional={"session_id": st.sampled_from(["s1", "s2"]),
                                              "timestamp_ms": st.integers(0, 9)})


def _assistant(text: str, kind: str, extra: dict[str, object]) -> dict[str, object]:
    event: dict[str, object] = {"type": "assistant", **extra,
                                "message": {"content": [{"type": "text", "text": text}] if text else []}}
    if kind == "delta":
        event["timestamp_ms"] = 1
        event.pop("model_call_id", None)
    elif kind == "recap":
        event["model_call_id"] = "m"
    else:
        event.pop("timestamp_ms", None)
    return event


def _tool(subtype: str, call_id: str, key: str, args: bool, outcome: object,
          extra: dict[str, object]) -> dict[str, object]:
    inner: dict[str, object] = {}
    if key == "function":
        inner = {"name": "Shell", "arguments": '{"command": "ls"}' if args else ""}
    elif args:
        inner["args"] = {"path": "p", "command": "c", "url": "u"}
    if subtype == "completed" and outcome is not None:
        inner["result"] = outcome
    return {"type": "tool_call", "subtype": subtype, "call_id": call_id, **extra,
            "tool_call": {key: inner} if key != "nope" else {}}


def _query(call_id: str, qtype: str) -> dict[str, object]:
    return {"type": "interaction_query", "subtype": "request", "query_type": qtype,
            "query": {qtype: {"args": {"url": "u", "command": "c", "toolCallId": call_id}}}}


event_objects = st.one_of(
    st.builds(_assistant, texts, st.sampled_from(["delta", "delta", "recap", "final"]), markers),
    st.builds(lambda text, sub, extra: {"type": "thinking", "subtype": sub, "text": text, **extra},
              texts, st.sampled_from(["delta", "delta", "completed"]), markers),
    st.builds(_tool, st.sampled_from(["started", "completed"]), ids, tool_keys, st.booleans(), outcomes,
              markers),
    st.builds(_query, ids, st.sampled_from(["webFetchRequestQuery", "shellRequestQuery", "otherQuery"])),
    st.builds(lambda sub, text: {"type": "result", "subtype": sub, "result": text, "is_error": sub == "error",
                                 "duration_ms": 3, "request_id": "r", "usage": {"inputTokens": 1}},
              st.sampled_from(["success", "error"]), texts),
    st.builds(lambda extra: {"type": "system", "subtype": "init", "model": "m", "cwd": "/w", **extra},
              markers),
    st.builds(lambda text: {"type": "user", "message": {"content": [{"type": "text", "text": text}]}}, texts),
    st.builds(lambda text: {"type": "error", "message": text}, texts),
    st.just("a banner line, not JSON"),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(event_objects, max_size=25), st.booleans())
def test_changes_alone_rebuild_generated_turns(objs: list[object], close: bool) -> None:
    events = [parse_event(o if isinstance(o, str) else orjson.dumps(o)) for o in objs]
    fold(events, close=close)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=40))
def test_changes_alone_rebuild_any_sequence_of_real_lines(lines: list[bytes]) -> None:
    fold([parse_event(line) for line in lines])


json_values = st.recursive(  # what a JSON line can hold (orjson reads 64-bit integers)
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=12,
)
shaped_keys = st.sampled_from(["type", "subtype", "message", "text", "tool_call", "call_id", "result",
                               "query", "query_type", "usage", "timestamp_ms", "model_call_id", "session_id"])
shaped_types = st.sampled_from(["assistant", "tool_call", "result", "thinking", "user", "system",
                                "interaction_query", "tool-call-started", "tool-call-completed", "error"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(
    event_objects,
    st.tuples(shaped_types, st.dictionaries(shaped_keys, json_values, max_size=5)).map(
        lambda pair: {**pair[1], "type": pair[0]}),
), max_size=20))
def test_changes_alone_rebuild_wrongly_shaped_turns(objs: list[object]) -> None:
    fold([parse_event(o if isinstance(o, str) else orjson.dumps(o)) for o in objs])


def test_to_result_after_close_gives_no_further_changes_and_the_same_calls() -> None:
    t, view, _ = fold(_events(RECORDINGS[2].read_bytes()))
    assert t.close() == ()
    assert view.calls == t.to_result().tool_calls
