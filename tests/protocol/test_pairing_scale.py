"""Pairing tool calls that share one id (a recording that redacted every id to
``<redacted>``) looks only at that id's running calls: linear, and the same calls as
pairing against every earlier call of the id (the rule before, kept here as the reference)."""

from __future__ import annotations

import sys
from types import FrameType

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from cursor_agent_api.protocol import Transcript, parse_event, transcript
from cursor_agent_api.protocol.tools import ToolCall, ToolStatus, tool_call_from_event_data

KEYS = ["readToolCall", "shellToolCall", "lsToolCall", None]  # None: a call of no known kind


def _line(subtype: str, call_id: str, key: str | None, n: int) -> dict[str, object]:
    inner: dict[str, object] = {"args": {"n": n}}
    if subtype == "completed":
        inner["result"] = {"success": {"content": str(n)}} if n % 3 else {"rejected": {}}
    return {"type": "tool_call", "subtype": subtype, "call_id": call_id,
            "tool_call": {key: inner} if key else {}, "session_id": "s"}


def _reference(lines: list[dict[str, object]]) -> list[dict[str, object]]:
    """The pairing rule, scanning every earlier call of the id (quadratic: the old code)."""
    calls: list[ToolCall] = []
    by_id: dict[str, list[ToolCall]] = {}
    for data in lines:
        tc = tool_call_from_event_data(data)
        assert tc is not None
        same = by_id.get(tc.call_id)
        found = None
        if same is not None:
            latest = same[-1]
            if data["subtype"] == "started":
                if latest.status is ToolStatus.RUNNING and transcript._same_tool(latest, tc):
                    found = latest
            else:
                found = next((c for c in same if c.status is ToolStatus.RUNNING
                              and transcript._same_tool(c, tc)), None)
                if found is None and transcript._same_tool(latest, tc):
                    found = latest
        if found is None:
            calls.append(tc)
            by_id.setdefault(tc.call_id, []).append(tc)
        else:
            found.update(tc)
    for call in calls:
        if call.status is ToolStatus.RUNNING:
            call.status = ToolStatus.ABANDONED
    return [c.to_dict() for c in calls]


def _fold(lines: list[dict[str, object]]) -> list[dict[str, object]]:
    t = Transcript.from_lines([orjson.dumps(d) for d in lines])
    t.close()
    return [c.to_dict() for c in t.tool_calls]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["started", "completed"]), st.sampled_from(["a", "b"]),
                          st.sampled_from(KEYS)), max_size=40))
def test_pairing_is_the_reference_rule(steps: list[tuple[str, str, str | None]]) -> None:
    lines = [_line(sub, cid, key, n) for n, (sub, cid, key) in enumerate(steps)]
    assert _fold(lines) == _reference(lines)


def test_many_calls_sharing_one_id_pair_in_linear_steps() -> None:
    n = 2000
    lines = []
    for i in range(n):
        key = KEYS[i % 3]
        lines += [_line("started", "<redacted>", key, i), _line("completed", "<redacted>", key, i)]
    events = [parse_event(orjson.dumps(data)) for data in lines]
    steps = 0

    def local(frame: FrameType, what: str, arg: object) -> object:
        nonlocal steps
        if what == "line":
            steps += 1
        return local

    def trace(frame: FrameType, what: str, arg: object) -> object:
        return local if frame.f_code is transcript._pair.__code__ else None

    t = Transcript()
    before = sys.gettrace()  # a coverage tracer, say: put back after
    sys.settrace(trace)  # counts the lines _pair runs: the work of pairing, not its time
    try:
        for event in events:
            t.add(event)
    finally:
        sys.settrace(before)
    assert steps <= 10 * len(lines)  # a few lines per event, not one per earlier call
    calls = t.tool_calls
    assert len(calls) == n
    assert [c.args for c in calls] == [{"n": i} for i in range(n)]
    assert all(c.status is not ToolStatus.RUNNING for c in calls)
