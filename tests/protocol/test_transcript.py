"""Transcript: the segment rule, pairing, abandonment, results."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from cursor_agent_api import EventType, ToolKind, ToolStatus, Transcript, parse_event


def a(text: str, **markers: object) -> str:
    return orjson.dumps({"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "text", "text": text}]}, **markers}).decode()


def tc(subtype: str, call_id: str, key: str, args: dict[str, object] | None = None,
       result: dict[str, object] | None = None, mcid: str = "m-0-x") -> str:
    inner: dict[str, object] = {}
    if args is not None:
        inner["args"] = args
    if result is not None:
        inner["result"] = result
    return orjson.dumps({"type": "tool_call", "subtype": subtype, "call_id": call_id,
                         "tool_call": {key: inner}, "model_call_id": mcid}).decode()


def test_segment_rule_with_partial_output_and_tools() -> None:
    lines = [
        a("Look", timestamp_ms=1), a("ing.", timestamp_ms=2),
        a("Looking.", timestamp_ms=3, model_call_id="m-0-x"),  # recap replaces the deltas
        tc("started", "c1", "lsToolCall", {"path": "."}),
        '{"type":"thinking","subtype":"delta","text":"hmm"}',
        a("Do", timestamp_ms=4),
        '{"type":"thinking","subtype":"completed"}',  # thinking does not close a segment
        a("ne", timestamp_ms=5),
        tc("completed", "c1", "lsToolCall", {"path": "."}, {"success": {}}),
        a("!", timestamp_ms=6),
        a("!"),  # final recap replaces "!" only; "Done" was closed by the tool call
    ]
    t = Transcript.from_lines(lines)
    assert t.text == "Looking.Done!"
    assert t.thinking == ["hmm"]


def test_without_partial_output_segments_are_appended() -> None:
    t = Transcript.from_lines([
        a("First.", timestamp_ms=1, model_call_id="m-0-x"),
        tc("started", "c1", "readToolCall", {"path": "a"}),
        tc("completed", "c1", "readToolCall", {"path": "a"}, {"success": {"content": "x"}}),
        a("Second."),
    ])
    assert t.text == "First.Second."


def test_parallel_calls_complete_in_finish_order() -> None:
    t = Transcript.from_lines([
        tc("started", "p1", "readToolCall", {"path": "a"}),
        tc("started", "p2", "grepToolCall", {"pattern": "x"}),
        tc("started", "p3", "globToolCall", {"globPattern": "*"}),
        tc("completed", "p3", "globToolCall", {"globPattern": "*"}, {"success": {"files": []}}),
        tc("completed", "p1", "readToolCall", {"path": "a"}, {"success": {"content": ""}}),
    ])
    t.close()
    assert [(c.call_id, c.status) for c in t.tool_calls] == [
        ("p1", ToolStatus.SUCCEEDED), ("p2", ToolStatus.ABANDONED), ("p3", ToolStatus.SUCCEEDED)]


def test_rejected_completion_keeps_started_args() -> None:
    t = Transcript.from_lines([
        tc("started", "s", "shellToolCall", {"command": "rm -rf /tmp/x"}),
        tc("completed", "s", "shellToolCall", None, {"rejected": {"reason": ""}}),
    ])
    (call,) = t.tool_calls
    assert call.command == "rm -rf /tmp/x" and call.status is ToolStatus.REJECTED
    assert "not approved" in call.output


def test_query_before_started_supplies_args_to_a_bare_completion() -> None:
    q = {"type": "interaction_query", "subtype": "request", "query_type": "webFetchRequestQuery",
         "query": {"id": 0, "webFetchRequestQuery": {"args": {"url": "https://x",
                                                              "toolCallId": "w"}}}}
    t = Transcript.from_lines([
        orjson.dumps(q).decode(),
        tc("completed", "w", "webFetchToolCall", None, {"rejected": {"reason": "User Rejected"}}),
    ])
    (call,) = t.tool_calls
    assert call.kind is ToolKind.WEB_FETCH and call.url == "https://x"


def test_first_result_is_authoritative_and_closes_open_calls() -> None:
    t = Transcript.from_lines([
        '{"type":"system","subtype":"init","session_id":"s1","model":"M","cwd":"/w"}',
        tc("started", "c", "shellToolCall", {"command": "sleep 99"}),
        '{"type":"result","subtype":"success","result":"one","request_id":"r1","duration_ms":5}',
        '{"type":"result","subtype":"success","result":"two"}',
    ])
    assert t.result_text == "one" and t.request_id == "r1" and t.duration_ms == 5
    assert t.tool_calls[0].status is ToolStatus.ABANDONED
    assert (t.session_id, t.model, t.cwd) == ("s1", "M", "/w")


def test_no_result_gives_failure_with_partial_text() -> None:
    t = Transcript.from_lines([a("partial", timestamp_ms=1)])
    r = t.to_result()
    assert not r.success and r.result == "partial" and r.text == "partial"
    assert r.error == "the stream ended without a result"


def test_error_result() -> None:
    t = Transcript.from_lines(['{"type":"result","subtype":"error","is_error":true,'
                               '"error":"Request timed out"}'])
    r = t.to_result()
    assert not r.success and r.error == "Request timed out"


def test_session_id_from_first_event_that_has_one() -> None:
    t = Transcript()
    t.add(parse_event('{"type":"user"}'))
    t.add(parse_event('{"type":"user","session_id":"a"}'))
    t.add(parse_event('{"type":"user","session_id":"b"}'))
    assert t.session_id == "a"


def test_keep_events_false_keeps_no_events() -> None:
    t = Transcript(keep_events=False)
    for _ in range(100):
        t.add(parse_event(a("x", timestamp_ms=1)))
    assert t.events == [] and t.event_count == 100 and t.text == "x" * 100
    assert all(e.type is EventType.ASSISTANT_DELTA for e in [parse_event(a("x", timestamp_ms=1))])


# ---- pairing that survives reused ids (issue 12, point 8) ---------------------------------

R = "<redacted>"


def test_a_started_for_a_completed_call_id_opens_a_new_call() -> None:
    t = Transcript.from_lines([
        tc("started", R, "shellToolCall", {"command": "ls"}),
        tc("completed", R, "shellToolCall", {"command": "ls"}, {"success": {"exitCode": 0}}),
        tc("started", R, "editToolCall", {"path": "a.txt"}),
        tc("completed", R, "editToolCall", None, {"success": {"diffString": "+x"}}),
        tc("started", R, "readToolCall", {"path": "a.txt"}),
        tc("completed", R, "readToolCall", None, {"success": {"content": "x"}}),
    ])
    t.close()
    assert [(c.kind, c.status, c.args) for c in t.tool_calls] == [
        (ToolKind.SHELL, ToolStatus.SUCCEEDED, {"command": "ls"}),
        (ToolKind.EDIT, ToolStatus.SUCCEEDED, {"path": "a.txt"}),
        (ToolKind.READ, ToolStatus.SUCCEEDED, {"path": "a.txt"}),
    ]
    assert t.tool_call(R) is t.tool_calls[-1]
    assert len(t.to_result().tool_calls) == 3


def test_reused_ids_parallel_calls_pair_by_kind_in_order() -> None:
    t = Transcript.from_lines([
        tc("started", R, "readToolCall", {"path": "a"}),
        tc("started", R, "grepToolCall", {"pattern": "x"}),
        tc("started", R, "readToolCall", {"path": "b"}),
        tc("completed", R, "grepToolCall", None, {"success": {}}),
        tc("completed", R, "readToolCall", None, {"success": {"content": "A"}}),
    ])
    t.close()
    assert [(c.kind, c.args, c.status) for c in t.tool_calls] == [
        (ToolKind.READ, {"path": "a"}, ToolStatus.SUCCEEDED),
        (ToolKind.GREP, {"pattern": "x"}, ToolStatus.SUCCEEDED),
        (ToolKind.READ, {"path": "b"}, ToolStatus.ABANDONED),
    ]


def test_a_completion_without_started_after_a_finished_call_with_that_id_is_its_own_call() -> None:
    t = Transcript.from_lines([
        tc("started", R, "shellToolCall", {"command": "ls"}),
        tc("completed", R, "shellToolCall", None, {"rejected": {"reason": ""}}),
        tc("completed", R, "webSearchToolCall", None, {"rejected": {"reason": "no"}}),
    ])
    assert [(c.kind, c.status) for c in t.tool_calls] == [
        (ToolKind.SHELL, ToolStatus.REJECTED), (ToolKind.WEB_SEARCH, ToolStatus.REJECTED)]


def test_a_repeated_event_of_the_same_call_still_updates_it() -> None:
    t = Transcript.from_lines([
        tc("started", "c1", "shellToolCall", {"command": "ls"}),
        tc("started", "c1", "shellToolCall", {"command": "ls -la"}),
        tc("completed", "c1", "shellToolCall", None, {"success": {"exitCode": 0}}),
        tc("completed", "c1", "shellToolCall", None, {"success": {"exitCode": 0, "stdout": "a"}}),
    ])
    (call,) = t.tool_calls
    assert call.args == {"command": "ls -la"} and call.stdout == "a"


def test_function_named_shell_is_a_shell_call() -> None:
    line = orjson.dumps({"type": "tool_call", "subtype": "started", "call_id": "f1",
                         "tool_call": {"function": {"name": "Shell",
                                                    "arguments": '{"command": "echo hi"}'}}})
    (call,) = Transcript.from_lines([line]).tool_calls
    assert (call.kind, call.name, call.command) == (ToolKind.SHELL, "Shell", "echo hi")
    other = orjson.dumps({"type": "tool_call", "subtype": "started", "call_id": "f2",
                          "tool_call": {"function": {"name": "my_tool", "arguments": "{}"}}})
    (call,) = Transcript.from_lines([other]).tool_calls
    assert (call.kind, call.name) == (ToolKind.FUNCTION, "my_tool")


def test_ls_duration_from_event_timestamps() -> None:
    def ls(subtype: str, ts: int, result: dict[str, object] | None = None) -> bytes:
        inner: dict[str, object] = {"args": {"path": "."}}
        if result is not None:
            inner["result"] = result
        return orjson.dumps({"type": "tool_call", "subtype": subtype, "call_id": "l1",
                             "tool_call": {"lsToolCall": inner}, "timestamp_ms": ts})

    t = Transcript.from_lines([ls("started", 1_000), ls("completed", 1_250, {"success": {}})])
    (call,) = t.tool_calls
    assert (call.started_at_ms, call.completed_at_ms, call.duration_ms) == (1_000, 1_250, 250)
    assert call.to_dict()["duration_ms"] == 250


def test_tool_clock_is_preferred_to_event_timestamps() -> None:
    started = {"type": "tool_call", "subtype": "started", "call_id": "s", "timestamp_ms": 5,
               "tool_call": {"shellToolCall": {"args": {"command": "x"}}, "startedAtMs": "100"}}
    done = {**started, "subtype": "completed", "timestamp_ms": 900,
            "tool_call": {"shellToolCall": {"result": {"success": {}}}, "startedAtMs": "100",
                          "completedAtMs": "160"}}
    (call,) = Transcript.from_lines([orjson.dumps(started), orjson.dumps(done)]).tool_calls
    assert call.duration_ms == 60


# ---- keep_content=False: no second copy of text and outputs (issue 11, point 4) -----------

def _recordings() -> list[Path]:
    return sorted((Path(__file__).parent.parent / "data" / "cursor-real").glob("*.ndjson"))


@pytest.mark.parametrize("path", _recordings(), ids=lambda p: p.name[:2])
def test_keep_content_false_keeps_no_text_or_results_and_changes_are_the_same(path: Path) -> None:
    full, lean = Transcript(), Transcript(keep_content=False)
    events = [parse_event(line) for line in path.read_bytes().splitlines() if line.strip()]
    results_before = [e.tool_call.result if e.tool_call else None for e in events]
    for event in events:
        # what a view folds is the same: the changes carry the text and the results
        assert [c.to_dict() for c in lean.add(event)] == [c.to_dict() for c in full.add(event)]
    assert [c.to_dict() for c in lean.close()] == [c.to_dict() for c in full.close()]
    # the events' own tool calls are untouched (the server stores them after the fold)
    assert [e.tool_call.result if e.tool_call else None for e in events] == results_before
    assert full.text and lean.text == "" and lean.segments == [""] * len(full.segments)
    assert lean.thinking == [""] * len(full.thinking)
    assert [(c.call_id, c.kind, c.status, c.args) for c in lean.tool_calls] == [
        (c.call_id, c.kind, c.status, c.args) for c in full.tool_calls
    ]
    assert any(c.result for c in full.tool_calls) == bool(full.tool_calls)
    assert all(c.result is None for c in lean.tool_calls)
    whole, kept = full.to_result(), lean.to_result()
    assert (kept.success, kept.result, kept.usage, kept.session_id) == (
        whole.success, full.result_text, whole.usage, whole.session_id)
    assert kept.text == "" and whole.text == full.text


def test_keep_content_false_deltas_and_thinking() -> None:
    lines = [
        '{"type":"thinking","subtype":"delta","text":"hm","session_id":"s"}',
        a("Hel", timestamp_ms=1), a("lo", timestamp_ms=2),
        '{"type":"tool_call","subtype":"started","call_id":"c1","session_id":"s",'
        '"tool_call":{"readToolCall":{"args":{"path":"a"}}}}',
        '{"type":"tool_call","subtype":"completed","call_id":"c1","session_id":"s",'
        '"tool_call":{"readToolCall":{"args":{"path":"a"},"result":{"success":{"content":"BIG"}}}}}',
    ]
    lean = Transcript(keep_content=False)
    changes = [c.to_dict() for line in lines for c in lean.add(parse_event(line))]
    assert [c.get("text") for c in changes if c["kind"] == "text_appended"] == ["Hel", "lo"]
    completed = [c for c in changes if c["kind"] == "tool_call_changed"][-1]
    assert completed["call"]["result"] == {"success": {"content": "BIG"}}
    assert lean.text == "" and lean.segments == [""] and lean.thinking == [""]
    call = lean.tool_call("c1")
    assert call is not None and call.status is ToolStatus.SUCCEEDED and call.result is None


def test_a_transcript_keeps_few_enough_attributes_for_cpythons_shared_keys() -> None:
    t = Transcript.from_lines(['{"type":"system","subtype":"init","session_id":"s"}',
                               '{"type":"result","subtype":"success","result":"x"}'])
    t.link_local = lambda call: None
    t.to_result()
    assert len(vars(t)) <= Transcript.MAX_ATTRIBUTES
