"""Events after the turn's first result are kept (``events``), never folded: the first result
is the turn's outcome, and its text, tool calls, usage and errors do not change after it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from cursor_agent_api.protocol import EventType, Transcript, parse_event

PAST = [
    '{"type":"system","subtype":"init","session_id":"s1","model":"late-model","cwd":"/late"}',
    '{"type":"user","message":{"content":[{"type":"text","text":"late prompt"}]},"session_id":"s1"}',
    '{"type":"assistant","message":{"content":[{"type":"text","text":"late"}]},"session_id":"s1",'
    '"timestamp_ms":9}',
    '{"type":"assistant","message":{"content":[{"type":"text","text":"late final"}]},'
    '"session_id":"s1"}',
    '{"type":"thinking","subtype":"delta","text":"hmm","session_id":"s1"}',
    '{"type":"tool_call","subtype":"started","call_id":"c9","session_id":"s1",'
    '"tool_call":{"lsToolCall":{"args":{"path":"."}}}}',
    '{"type":"error","message":"late error","session_id":"s1"}',
    '{"type":"result","subtype":"error","is_error":true,"error":"boom","session_id":"s1",'
    '"duration_ms":7,"usage":{"inputTokens":3}}',
]


@pytest.mark.parametrize("session_first", [True, False])
def test_nothing_after_the_first_result_changes_the_fold(session_first: bool) -> None:
    head = ['{"type":"system","subtype":"init","session_id":"s0"}'] if session_first else []
    head += ['{"type":"assistant","message":{"content":[{"type":"text","text":"ea"}]},'
             '"timestamp_ms":1}',
             '{"type":"assistant","message":{"content":[{"type":"text","text":"rly"}]},'
             '"timestamp_ms":2}',
             '{"type":"result","subtype":"success","result":"early","session_id":"s0"}']
    t = Transcript()
    for line in head:
        t.add(parse_event(line))
    before = orjson.dumps(t.to_result().to_dict() | {"events": None})
    state = (t.text, t.segments, t.thinking, t.errors, t.model, t.cwd, t.prompt)
    for line in PAST:
        assert t.add(parse_event(line)) == ()  # no change to apply
    assert (t.text, t.segments, t.thinking, t.errors, t.model, t.cwd, t.prompt) == state
    result = t.to_result()
    assert orjson.dumps(result.to_dict() | {"events": None}) == before
    assert result.success and result.result == "early" and result.text == "early"
    assert result.tool_calls == [] and result.usage is None and result.duration_ms is None
    # kept as data, in order
    assert len(result.events) == len(head) + len(PAST) == t.event_count
    assert [e.type for e in result.events][-1] is EventType.RESULT_ERROR
    assert t.result_event is not None and t.result_event.text == "early"


def test_a_delta_after_the_result_is_not_folded_on_the_fast_path() -> None:
    t = Transcript.from_lines([
        '{"type":"system","subtype":"init","session_id":"s"}',
        '{"type":"result","subtype":"success","result":"done","session_id":"s"}',
        '{"type":"assistant","message":{"content":[{"type":"text","text":"more"}]},'
        '"session_id":"s","timestamp_ms":3}',
        '{"type":"thinking","subtype":"delta","text":"more","session_id":"s"}',
    ])
    assert (t.text, t.segments, t.thinking) == ("", [], [])


def test_the_librarys_own_errors_after_the_result_are_still_folded() -> None:
    """An error this library reports after the agent's result (a line over max_line_bytes, the
    process's exit, a timeout) decides the turn's outcome: it is folded (an error_reported
    change, ``errors``), unlike the agent's own words past its result."""
    from cursor_agent_api.protocol import error_event

    t = Transcript()
    t.add(parse_event('{"type":"result","subtype":"success","result":"done","session_id":"s0"}'))
    agents = t.add(parse_event('{"type":"error","message":"late error","session_id":"s0"}'))
    ours = t.add(error_event("a line was longer than max_line_bytes", size=5000))
    assert agents == ()
    assert [c.kind for c in ours] == ["error_reported"]
    assert t.errors == ["a line was longer than max_line_bytes"]


def test_an_overlong_line_after_the_result_shows_in_the_stream_changes(
    stand_in_agent: Callable[..., Path],
) -> None:
    """End to end: the turn fails because of the line after the result, and the changes a view
    draws from say why."""
    from cursor_agent_api import AgentConfig, CursorAgentClient

    agent = stand_in_agent(
        "echo '{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s1\",\"model\":\"m\"}'\n"
        "echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done\","
        "\"session_id\":\"s1\",\"duration_ms\":5}'\n"
        "head -c 5000 /dev/zero | tr '\\0' 'x'; echo"
    )
    with CursorAgentClient(AgentConfig(agent_binary=str(agent), max_line_bytes=1024)) as client:
        stream = client.query_stream("hi")
        kinds = [c.kind for _event, changes in stream.with_changes() for c in changes]
        result = stream.wait()
    assert not result.success
    assert "error_reported" in kinds
    assert stream.transcript.errors
