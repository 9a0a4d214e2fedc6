"""The sans-I/O ACP codec and mapper: frames in, print mode's events out, one fold."""

from __future__ import annotations

import json
from typing import Any

from cursor_agent_api.protocol import EventType, ToolKind, ToolStatus, Transcript
from cursor_agent_api.protocol.acp_codec import (
    AcpDecoder,
    AcpEncoder,
    RpcNoise,
    RpcNotification,
    RpcRequest,
    RpcResponse,
)
from cursor_agent_api.protocol.acp_mapper import AcpMapper

SID = "0a993b58-1111-4679-a33c-9bfd6f020f1e"


def line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def test_decoder_reads_every_kind_of_message_split_anywhere() -> None:
    stream = b"".join([
        b"Cursor Agent v2026.08.11\n",
        line({"jsonrpc": "2.0", "method": "session/update",
              "params": {"sessionId": SID, "update": {"sessionUpdate": "agent_message_chunk",
                                                       "content": {"type": "text", "text": "ok"}}}}),
        line({"jsonrpc": "2.0", "id": 0, "method": "session/request_permission", "params": {}}),
        line({"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}}),
        line({"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "Invalid params",
                                                   "data": [{"message": "Required"}]}}),
        line({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}),
        b'{"a": ' + b"[" * 400 + b"]" * 400 + b"}\n",
    ])
    dec = AcpDecoder()
    out = []
    for i in range(0, len(stream), 7):
        out += dec.feed(stream[i:i + 7])
    out += dec.close()
    assert [type(m) for m in out] == [RpcNoise, RpcNotification, RpcRequest, RpcResponse,
                                      RpcResponse, RpcResponse, RpcNoise]
    assert out[2].id == 0 and out[3].result == {"stopReason": "end_turn"}
    assert out[4].error is not None and out[4].error.detail == "Required"
    assert out[5].id is None
    assert isinstance(out[6], RpcNoise) and out[6].reason == "nested too deeply"


def test_decoder_bounds_lines_and_reads_the_tail() -> None:
    dec = AcpDecoder(max_line_bytes=64)
    assert dec.feed(b"x" * 100) == []
    (noise,) = dec.feed(b"\n")
    assert isinstance(noise, RpcNoise) and "100 bytes" in noise.reason
    dec.feed(b'{"jsonrpc":"2.0","method":"x","params":{}}')
    assert dec.close() == [RpcNotification("x", {})]


def test_encoder_numbers_requests_and_answers_by_the_agents_id() -> None:
    enc = AcpEncoder()
    ids = [enc.request("session/new", {"cwd": "/w", "mcpServers": []})[0] for _ in range(3)]
    assert ids == [1, 2, 3]
    assert json.loads(enc.result(0, {})) == {"jsonrpc": "2.0", "id": 0, "result": {}}
    assert json.loads(enc.notification("session/cancel", {"sessionId": SID}))["params"] == {
        "sessionId": SID}


def fold(events: list[Any]) -> Transcript:
    t = Transcript()
    for e in events:
        t.add(e)
    return t


def test_a_turn_folds_into_a_sensible_result() -> None:
    m = AcpMapper(SID, clock=lambda: 1000.0)
    cid = "call-aaaa-0\nfc_1d06_0"
    events = m.begin("list and say ok", model="default[]", cwd="/w")
    events += m.update({"sessionUpdate": "session_info_update", "title": "Okay"})
    events += m.update({"sessionUpdate": "agent_thought_chunk",
                        "content": {"type": "text", "text": "The user requested a"}})
    for text in ("Let me ", "look."):
        events += m.update({"sessionUpdate": "agent_message_chunk",
                            "content": {"type": "text", "text": text}})
    # 02.27: the same id twice as tool_call, generic then enriched; then updates
    events += m.update({"sessionUpdate": "tool_call", "toolCallId": cid, "title": "Terminal",
                        "kind": "execute", "status": "pending", "rawInput": {}})
    events += m.update({"sessionUpdate": "tool_call", "toolCallId": cid, "title": "`ls`",
                        "kind": "execute", "status": "pending", "rawInput": {"command": "ls"}})
    events += m.update({"sessionUpdate": "tool_call_update", "toolCallId": cid, "status": "in_progress"})
    events += m.update({"sessionUpdate": "tool_call_update", "toolCallId": cid, "status": "completed",
                        "rawOutput": {"exitCode": 0, "stdout": "a.txt\n", "stderr": ""}})
    events += m.update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ok"}})
    events += m.update({"sessionUpdate": "brand_new_kind", "x": 1})
    events += m.end("end_turn", duration_ms=1234)
    assert {e.transport for e in events} == {"acp"}
    assert {e.session_id for e in events} == {SID}
    types = [e.type for e in events]
    assert types.count(EventType.TOOL_CALL_STARTED) == 2  # the enrichment is a change, not a new call
    assert EventType.THINKING_COMPLETED in types
    t = fold(events)
    r = t.to_result()
    assert r.success and r.error is None
    assert r.text == "Let me look.ok" == r.result
    assert t.segments == ["Let me look.", "ok"]
    assert t.thinking == ["The user requested a"]
    assert r.usage is None and r.duration_ms == 1234 and r.model == "default[]"
    (call,) = r.tool_calls
    assert call.call_id == cid and call.kind is ToolKind.SHELL and call.command == "ls"
    assert call.status is ToolStatus.SUCCEEDED and call.output == "a.txt\n" and call.exit_code == 0
    unknown = [e for e in events if e.type is EventType.UNKNOWN]
    assert [e.data["type"] for e in unknown] == ["acp:session_info_update", "acp:brand_new_kind"]


def test_a_rejected_call_reported_completed_is_rejected() -> None:
    m = AcpMapper(SID)
    call = {"toolCallId": "c1", "title": "`rm -rf /`", "kind": "execute", "status": "pending",
            "content": [{"type": "content", "content": {"type": "text", "text": "Not in allowlist: rm"}}]}
    params = {"sessionId": SID, "toolCall": call, "options": []}
    events = m.permission_request(0, params)
    events += m.permission_decision(0, params, "reject_once", "reject-once", "never")
    events += m.update({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"})
    events += m.end("end_turn", duration_ms=5)
    queries = [e for e in events if e.type is EventType.INTERACTION_QUERY]
    assert [e.subtype for e in queries] == ["request", "response"]
    assert queries[1].data["decision"] == "reject_once"
    assert queries[0].data["query"]["permissionRequestQuery"]["args"]["command"] == "rm -rf /"
    (tc,) = fold(events).to_result().tool_calls
    assert tc.status is ToolStatus.REJECTED and tc.error_message == "never"


def test_a_late_rejection_of_a_completed_call_is_folded() -> None:
    m = AcpMapper(SID)
    events = m.update({"sessionUpdate": "tool_call", "toolCallId": "c", "kind": "fetch",
                       "title": "Fetch", "status": "completed"})
    params = {"toolCall": {"toolCallId": "c"}}
    events += m.permission_decision(1, params, "cancelled", None)
    (tc,) = fold(events).tool_calls
    assert tc.kind is ToolKind.WEB_FETCH and tc.status is ToolStatus.REJECTED


def test_kinds_map_to_tool_kinds() -> None:
    m = AcpMapper(SID)
    frames = [
        {"toolCallId": "r", "kind": "read", "title": "a.txt", "rawInput": {"path": "a.txt"},
         "status": "completed", "rawOutput": {"content": "hello"}},
        {"toolCallId": "g", "kind": "search", "title": "Find", "rawInput": {"pattern": "TODO", "path": "."},
         "status": "completed", "rawOutput": {"totalMatches": 2, "truncated": False}},
        {"toolCallId": "web_search_1", "kind": "search", "title": "Search", "status": "pending"},
        {"toolCallId": "web_fetch_0", "kind": "fetch", "title": "Fetch", "rawInput": {"url": "https://x.org"},
         "status": "pending"},
        {"toolCallId": "m", "kind": "other", "title": "MCP: add", "rawInput": {}, "status": "completed",
         "rawOutput": {"error": "MCP error -32601: Method not found"}},
        {"toolCallId": "p", "kind": "other", "title": "Create Plan: Rename", "status": "completed",
         "content": [{"type": "content", "content": {"type": "text", "text": "Plan saved to file:///p.md"}}]},
        {"toolCallId": "d", "kind": "read", "title": "secret", "rawInput": {"path": "secret"},
         "status": "completed", "content": [{"type": "content",
                                             "content": {"type": "text", "text": "Permission denied"}}]},
    ]
    events = []
    for f in frames:
        events += m.update({"sessionUpdate": "tool_call", **f})
    calls = {c.call_id: c for c in fold(events).tool_calls}
    assert (calls["r"].kind, calls["r"].content, calls["r"].path) == (ToolKind.READ, "hello", "a.txt")
    assert (calls["g"].kind, calls["g"].pattern) == (ToolKind.GREP, "TODO")
    assert calls["web_search_1"].kind is ToolKind.WEB_SEARCH
    assert (calls["web_fetch_0"].kind, calls["web_fetch_0"].url) == (ToolKind.WEB_FETCH, "https://x.org")
    assert (calls["m"].kind, calls["m"].mcp_tool) == (ToolKind.MCP, "add")
    assert calls["m"].status is ToolStatus.ERROR
    assert calls["m"].error_message == "MCP error -32601: Method not found"
    assert calls["p"].kind is ToolKind.CREATE_PLAN
    assert calls["d"].status is ToolStatus.DENIED


def test_cancelled_and_other_stop_reasons_are_error_results() -> None:
    for stop in ("cancelled", "refusal", "max_tokens"):
        m = AcpMapper(SID)
        r = fold(m.end(stop, duration_ms=1)).to_result()
        assert not r.success and stop in (r.error or "")
    m = AcpMapper(SID)
    assert m.end("end_turn", duration_ms=1) and m.end("end_turn", duration_ms=1) == []


def test_questions_plans_todos_and_tasks_become_events() -> None:
    m = AcpMapper(SID)
    events = m.question_request(4, {"toolCallId": "q", "questions": []})
    events += m.question_answer(4, {"outcome": "answered", "answers": []})
    events += m.plan_request(5, {"toolCallId": "p", "name": "Rename"})
    events += m.plan_answer(5, {"outcome": "accepted"})
    events += m.todos({"toolCallId": "t", "todos": [{"id": "1", "content": "x", "status": "pending"}]})
    events += m.task({"toolCallId": "k", "description": "Explore", "prompt": "look"})
    q = [e for e in events if e.type is EventType.INTERACTION_QUERY]
    assert [(e.data["query_type"], e.subtype, e.data.get("decision")) for e in q] == [
        ("askQuestionInteractionQuery", "request", None),
        ("askQuestionInteractionQuery", "response", "answered"),
        ("createPlanRequestQuery", "request", None),
        ("createPlanRequestQuery", "response", "accepted")]
    calls = fold(events).tool_calls
    assert [(c.kind, c.summary()) for c in calls] == [(ToolKind.TODOS, "1 todos"), (ToolKind.FUNCTION, "")]
    assert calls[1].name == "Task" and calls[1].args["description"] == "Explore"


def test_print_mode_events_say_stream_json() -> None:
    from cursor_agent_api.protocol import parse_event

    event = parse_event('{"type":"assistant","message":{"content":[{"type":"text","text":"x"}]}}')
    assert event.transport == "stream-json"
    assert AcpMapper(SID).note("context_reset").transport == "acp"
