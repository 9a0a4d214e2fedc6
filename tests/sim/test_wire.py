"""sim.wire: every builder parses back into the right normalized event, and the
builders reproduce lines of the real recordings byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from cursor_agent_api.protocol import EventType, ToolKind, ToolStatus, Transcript, parse_event
from cursor_agent_api.sim import wire

DATA = Path(__file__).parent.parent / "data" / "cursor-real"
SID = "28ada7b4-f779-4c22-ae9f-1396dc582cd4"


def _lines(name: str) -> list[dict[str, Any]]:
    path = next(DATA.glob(f"{name}-*.ndjson"))
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def test_event_builders_parse_back() -> None:
    cases: list[tuple[dict[str, Any], EventType]] = [
        (wire.system_init(SID, "/ws", "Auto"), EventType.SYSTEM_INIT),
        (wire.user(SID, "hi"), EventType.USER),
        (wire.thinking_delta(SID, "hm", 1), EventType.THINKING_DELTA),
        (wire.thinking_completed(SID, 2), EventType.THINKING_COMPLETED),
        (wire.assistant_delta(SID, "He", 3), EventType.ASSISTANT_DELTA),
        (wire.assistant_segment(SID, "Hello", "r-0-abcd", 4), EventType.ASSISTANT),
        (wire.assistant_final(SID, "Bye"), EventType.ASSISTANT),
        (
            wire.interaction_request(SID, 0, "webFetchRequestQuery", wire.web_fetch_args("u", "c"), 5),
            EventType.INTERACTION_QUERY,
        ),
        (
            wire.interaction_response(SID, 0, "webFetchRequestQuery", wire.rejected(), 6),
            EventType.INTERACTION_QUERY,
        ),
        (
            wire.result_success(SID, "r", "HelloBye", 9, wire.usage(1, 2, 3, 4)),
            EventType.RESULT_SUCCESS,
        ),
    ]
    for obj, etype in cases:
        line = wire.encode(obj)
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        event = parse_event(line[:-1])
        assert event.type is etype, obj
        assert event.session_id == SID
    result = parse_event(wire.encode(cases[-1][0]))
    assert result.usage is not None and result.usage.cache_write_tokens == 4


def _pair(
    kind_key: str, args: dict[str, Any], result: dict[str, Any], *, keep_args: bool = True
) -> Transcript:
    call_id = "call_abc\nfc_def"
    t = Transcript()
    t.add(
        parse_event(
            wire.encode(
                wire.tool_call_started(
                    SID,
                    call_id,
                    kind_key,
                    args,
                    model_call_id="r-0-abcd",
                    started_at_ms=10,
                    timestamp_ms=10,
                )
            )
        )
    )
    t.add(
        parse_event(
            wire.encode(
                wire.tool_call_completed(
                    SID,
                    call_id,
                    kind_key,
                    result,
                    args=args if keep_args else None,
                    model_call_id="r-0-abcd",
                    started_at_ms=10,
                    completed_at_ms=25,
                    timestamp_ms=25,
                )
            )
        )
    )
    t.close()
    assert len(t.tool_calls) == 1
    assert t.tool_calls[0].call_id == call_id
    assert t.tool_calls[0].duration_ms == 15
    return t


def test_tool_builders_parse_back() -> None:
    tc = _pair(
        "readToolCall", wire.read_args("/ws/a.txt"), wire.read_success("/ws/a.txt", "x\ny\n")
    ).tool_calls[0]
    assert (tc.kind, tc.status, tc.content, tc.read_range) == (
        ToolKind.READ,
        ToolStatus.SUCCEEDED,
        "x\ny\n",
        (1, 3),
    )

    tree = wire.dir_tree_node("/ws", [wire.dir_tree_node("/ws/src", files=["m.py"])], ["a.txt"])
    tc = _pair("lsToolCall", wire.ls_args("/ws"), wire.ls_success(tree)).tool_calls[0]
    assert tc.kind is ToolKind.LS and tc.status is ToolStatus.SUCCEEDED
    assert tc.output.splitlines() == ["/ws", "  src/", "    m.py", "  a.txt"]

    tc = _pair(
        "grepToolCall",
        wire.grep_args("TODO", "/ws"),
        wire.grep_success("TODO", "/ws", [("a.py", [(3, "# TODO")])]),
    ).tool_calls[0]
    assert tc.kind is ToolKind.GREP and tc.grep_matches == [("a.py", 3, "# TODO")]

    tc = _pair(
        "globToolCall", wire.glob_args("*.py", "/ws"), wire.glob_success("*.py", "/ws", ["a.py"])
    ).tool_calls[0]
    assert tc.kind is ToolKind.GLOB and tc.files == ["a.py"] and tc.pattern == "*.py"

    tc = _pair(
        "editToolCall",
        wire.edit_args("/ws/n.txt", "a\n"),
        wire.edit_success("/ws/n.txt", None, "a\n", "--- /dev/null\n+++ b//ws/n.txt\n+a", 1, 0),
    ).tool_calls[0]
    assert tc.kind is ToolKind.EDIT and tc.new_content == "a\n" and tc.diff is not None

    args = wire.shell_args("echo hi", "c", conversation_id=SID, request_id="r", description="Echo")
    tc = _pair("shellToolCall", args, wire.shell_outcome("echo hi", "", 0, "hi\n", "", 4)).tool_calls[0]
    assert (tc.kind, tc.status, tc.exit_code, tc.output) == (
        ToolKind.SHELL,
        ToolStatus.SUCCEEDED,
        0,
        "hi\n",
    )
    tc = _pair("shellToolCall", args, wire.shell_outcome("false", "", 1, "", "no\n", 4)).tool_calls[0]
    assert (tc.status, tc.exit_code) == (ToolStatus.FAILED, 1)
    tc = _pair("shellToolCall", args, wire.shell_rejected("echo hi", "/ws"), keep_args=False).tool_calls[0]
    assert tc.status is ToolStatus.REJECTED and tc.command == "echo hi"  # args kept from started

    todos = [wire.todo_item("1", "Write tests", "TODO_STATUS_IN_PROGRESS", 5)]
    tc = _pair("updateTodosToolCall", wire.todos_args(todos), wire.todos_success(todos)).tool_calls[0]
    assert tc.kind is ToolKind.TODOS and tc.output == "[~] Write tests"

    tc = _pair(
        "webFetchToolCall",
        wire.web_fetch_args("https://e.x", "c"),
        wire.web_fetch_success("https://e.x", "# E"),
    ).tool_calls[0]
    assert tc.kind is ToolKind.WEB_FETCH and tc.output == "# E"

    tc = _pair(
        "askQuestionToolCall", wire.ask_question_args("Which?", []), wire.rejected("skipped")
    ).tool_calls[0]
    assert tc.kind is ToolKind.ASK_QUESTION and tc.status is ToolStatus.REJECTED

    tc = _pair(
        "readToolCall", wire.read_args("/ws/x"), wire.error_outcome("no such file", path="/ws/x")
    ).tool_calls[0]
    assert tc.status is ToolStatus.ERROR and tc.error_message == "no such file"


def test_query_recovers_args_of_a_completed_without_started() -> None:
    t = Transcript()
    for obj in [
        wire.interaction_request(
            SID,
            1,
            "webSearchRequestQuery",
            {"searchTerm": "q", "toolCallId": "t1"},
            1,
            skip_approval=None,
        ),
        wire.interaction_response(SID, 1, "webSearchRequestQuery", wire.rejected(), 2),
        wire.tool_call_completed(
            SID,
            "t1",
            "webSearchToolCall",
            wire.rejected(),
            args=None,
            model_call_id="r-3-2w8u",
            started_at_ms=3,
            completed_at_ms=4,
            timestamp_ms=4,
        ),
    ]:
        t.add(parse_event(wire.encode(obj)))
    assert t.tool_calls[0].args == {"searchTerm": "q", "toolCallId": "t1"}


def test_check_refuses_a_misshapen_object() -> None:
    with pytest.raises(wire.WireShapeError):
        wire.encode({"type": "tool_call", "subtype": "started", "call_id": "c", "tool_call": {}})
    with pytest.raises(wire.WireShapeError):
        wire.check(wire.assistant_final(SID, "x"), EventType.ASSISTANT_DELTA)


# ---- byte-for-byte against the real recordings ----------------------------------------------


def _same(built: dict[str, Any], recorded: dict[str, Any]) -> None:
    assert wire.encode(built) == orjson.dumps(recorded) + b"\n"


def test_builders_match_recording_01() -> None:
    lines = _lines("01")
    sid = lines[0]["session_id"]
    _same(wire.system_init(sid, lines[0]["cwd"], "GPT-5 Mini"), lines[0])
    _same(wire.user(sid, lines[1]["message"]["content"][0]["text"]), lines[1])
    _same(wire.assistant_delta(sid, "River", lines[2]["timestamp_ms"]), lines[2])
    final = lines[-2]
    _same(wire.assistant_final(sid, final["message"]["content"][0]["text"]), final)
    r = lines[-1]
    _same(
        wire.result_success(
            sid, r["request_id"], r["result"], r["duration_ms"], wire.usage(6961, 267, 14848, 0)
        ),
        r,
    )


def test_builders_match_recording_02_read() -> None:
    lines = _lines("02")
    sid = lines[0]["session_id"]
    started, completed = lines[2], lines[3]
    cid, mcid = started["call_id"], started["model_call_id"]
    path = "/hcn-verify/cursor-capture/ws-main/notes.txt"
    tc = completed["tool_call"]
    _same(
        wire.tool_call_started(
            sid,
            cid,
            "readToolCall",
            wire.read_args(path),
            model_call_id=mcid,
            started_at_ms=1789644703170,
            timestamp_ms=started["timestamp_ms"],
        ),
        started,
    )
    _same(
        wire.tool_call_completed(
            sid,
            cid,
            "readToolCall",
            wire.read_success(path, "first line\n\nprobe13"),
            args=wire.read_args(path),
            model_call_id=mcid,
            started_at_ms=int(tc["startedAtMs"]),
            completed_at_ms=int(tc["completedAtMs"]),
            timestamp_ms=completed["timestamp_ms"],
        ),
        completed,
    )


def test_builders_match_recording_07_shell_and_fetch_rejected() -> None:
    lines = _lines("07")
    sid = lines[0]["session_id"]
    seg, started, completed = lines[2], lines[3], lines[4]
    _same(
        wire.assistant_segment(
            sid, "Running the command to fetch headers.", seg["model_call_id"], seg["timestamp_ms"]
        ),
        seg,
    )
    cid, mcid = started["call_id"], started["model_call_id"]
    cmd = "curl -sI https://example.com"
    args = wire.shell_args(
        cmd,
        cid,
        conversation_id=sid,
        request_id="c9f380cd-57f9-45d4-82ea-b89c8e01a672",
        description="Fetch response headers from example.com",
    )
    tc = completed["tool_call"]
    _same(
        wire.tool_call_started(
            sid,
            cid,
            "shellToolCall",
            args,
            model_call_id=mcid,
            started_at_ms=int(tc["startedAtMs"]),
            timestamp_ms=started["timestamp_ms"],
            description="Fetch response headers from example.com",
        ),
        started,
    )
    _same(
        wire.tool_call_completed(
            sid,
            cid,
            "shellToolCall",
            wire.shell_rejected(cmd, "/hcn-verify/cursor-capture/ws-main"),
            args=None,
            model_call_id=mcid,
            started_at_ms=int(tc["startedAtMs"]),
            completed_at_ms=int(tc["completedAtMs"]),
            timestamp_ms=completed["timestamp_ms"],
        ),
        completed,
    )
    req, resp = lines[10], lines[11]
    fcid = req["query"]["webFetchRequestQuery"]["args"]["toolCallId"]
    _same(
        wire.interaction_request(
            sid,
            0,
            "webFetchRequestQuery",
            wire.web_fetch_args("https://example.com", fcid),
            req["timestamp_ms"],
        ),
        req,
    )
    _same(
        wire.interaction_response(
            sid, 0, "webFetchRequestQuery", wire.rejected("User Rejected"), resp["timestamp_ms"]
        ),
        resp,
    )


def test_builders_match_recording_05_ask_question() -> None:
    lines = _lines("05")
    sid = lines[0]["session_id"]
    req, resp = lines[2], lines[3]
    inner = req["query"]["askQuestionInteractionQuery"]
    a = inner["args"]
    _same(
        wire.interaction_request(
            sid,
            0,
            "askQuestionInteractionQuery",
            wire.ask_question_args(a["title"], a["questions"]),
            req["timestamp_ms"],
            skip_approval=None,
            tool_call_id=inner["toolCallId"],
        ),
        req,
    )
    reason = "Questions skipped by the user, continue with the information you already have"
    _same(
        wire.interaction_response(
            sid, 0, "askQuestionInteractionQuery", wire.rejected(reason), resp["timestamp_ms"]
        ),
        resp,
    )


def test_builders_match_recording_06_shell_success() -> None:
    lines = _lines("06")
    sid = lines[0]["session_id"]
    completed = lines[3]
    tc = completed["tool_call"]
    inner = tc["shellToolCall"]
    cmd = "curl -sI https://example.com"
    args = wire.shell_args(
        cmd,
        completed["call_id"],
        conversation_id=sid,
        request_id=inner["args"]["requestId"],
        description=inner["description"],
    )
    assert args == inner["args"]
    ok = inner["result"]["success"]
    outcome = wire.shell_outcome(cmd, "", 0, ok["stdout"], "", 1510)
    outcome["success"]["localExecutionTimeMs"] = 354
    assert outcome == inner["result"]


def test_builders_match_recording_08_edit_and_thinking() -> None:
    lines = _lines("08")
    sid = lines[0]["session_id"]
    _same(wire.thinking_delta(sid, 'Appending "probe13" ', lines[2]["timestamp_ms"]), lines[2])
    _same(wire.thinking_completed(sid, lines[4]["timestamp_ms"]), lines[4])
    completed = next(
        x for x in lines if x.get("subtype") == "completed" and "editToolCall" in x.get("tool_call", {})
    )
    tc = completed["tool_call"]
    path = "/hcn-cursor-spike/ws-main/notes.txt"
    diff = f"--- a/{path}\n+++ b/{path}\n@@ -1,2 +1,3 @@\n alpha\n beta\n+probe13"
    _same(
        wire.tool_call_completed(
            sid,
            completed["call_id"],
            "editToolCall",
            wire.edit_success(path, "alpha\nbeta\n", "alpha\nbeta\nprobe13\n", diff, 1, 0),
            args=wire.edit_args(path, "alpha\nbeta\nprobe13"),
            model_call_id=completed["model_call_id"],
            started_at_ms=int(tc["startedAtMs"]),
            completed_at_ms=int(tc["completedAtMs"]),
            timestamp_ms=completed["timestamp_ms"],
        ),
        completed,
    )


def test_builders_match_todos_fragment() -> None:
    frag = [
        orjson.loads(x) for x in (DATA / "fragments").glob("*.ndjson").__next__().read_bytes().splitlines()
    ]
    completed = next(x for x in frag if x.get("type") == "tool_call" and x.get("subtype") == "completed")
    inner = completed["tool_call"]["updateTodosToolCall"]
    todos = inner["result"]["success"]["todos"]
    assert wire.todos_success(todos, was_merge=True) == inner["result"]
    t = inner["args"]["todos"][0]
    built = wire.todo_item(t["id"], t["content"], t["status"], int(t["createdAt"]), int(t["updatedAt"]))
    assert built == t


def test_more_tool_builders_parse_back() -> None:
    tc = _pair(
        "writeToolCall",
        wire.write_args("/ws/a.txt", "a\nb\n", "c"),
        wire.write_success("/ws/a.txt", "a\nb\n"),
    ).tool_calls[0]
    assert (tc.kind, tc.status, tc.output) == (
        ToolKind.WRITE,
        ToolStatus.SUCCEEDED,
        "/ws/a.txt: 2 lines written",
    )
    tc = _pair(
        "deleteToolCall", wire.delete_args("/ws/a.txt", "c"), wire.delete_success("/ws/a.txt", "x")
    ).tool_calls[0]
    assert (tc.kind, tc.status, tc.path) == (ToolKind.DELETE, ToolStatus.SUCCEEDED, "/ws/a.txt")
    refs = [{"title": "Example", "url": "https://example.com", "chunk": "..."}]
    tc = _pair(
        "webSearchToolCall", wire.web_search_args("example", "c"), wire.web_search_success(refs)
    ).tool_calls[0]
    assert (tc.kind, tc.pattern, tc.references) == (ToolKind.WEB_SEARCH, "example", refs)
    tc = _pair(
        "mcpToolCall", wire.mcp_args("faz-ai", "get_board", {}, "c"), wire.mcp_success(["9 columns"])
    ).tool_calls[0]
    assert (tc.kind, tc.mcp_server, tc.mcp_tool, tc.mcp_output) == (
        ToolKind.MCP,
        "faz-ai",
        "get_board",
        "9 columns",
    )
    tc = _pair(
        "getMcpToolsToolCall", wire.get_mcp_tools_args("faz-ai", "c", "get_board"), wire.mcp_success(["{}"])
    ).tool_calls[0]
    assert tc.kind is ToolKind.MCP_TOOLS and tc.mcp_server == "faz-ai"


def test_mcp_builders_match_the_fragment() -> None:
    path = next((DATA / "fragments").glob("*.ndjson"))
    frag = [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]
    started = [x for x in frag if x.get("type") == "tool_call" and x.get("subtype") == "started"]
    mcp = next(x for x in started if "mcpToolCall" in x["tool_call"])
    assert wire.mcp_args("faz-ai", "get_board", {}, mcp["call_id"]) == mcp["tool_call"]["mcpToolCall"]["args"]
    tools = next(x for x in started if "getMcpToolsToolCall" in x["tool_call"])
    built = wire.get_mcp_tools_args("faz-ai", tools["call_id"], "get_board")
    assert built == tools["tool_call"]["getMcpToolsToolCall"]["args"]
    assert list(built) == list(tools["tool_call"]["getMcpToolsToolCall"]["args"])  # key order too
