"""parse_event: every dialect, and lines that are not what they should be."""

from __future__ import annotations

import orjson
import pytest

from cursor_agent_api import AgentEvent, EventType, ToolKind, ToolStatus, parse_event
from cursor_agent_api.protocol import kind_for_key, strip_ansi


def test_non_json_line_is_raw_with_ansi_stripped() -> None:
    line = b"\x1b[1;32mWelcome to Cursor Agent\x1b[0m"
    e = parse_event(line)
    assert e.type is EventType.RAW
    assert e.text == "Welcome to Cursor Agent"
    assert e.raw == line.decode()  # original kept
    assert e.data == {"type": "raw", "data": line.decode()}


@pytest.mark.parametrize("line", ["[1,2]", '"str"', "42", "null", "true"])
def test_json_that_is_not_an_object_is_raw(line: str) -> None:
    assert parse_event(line).type is EventType.RAW


def test_invalid_utf8_is_its_event_not_a_crash() -> None:
    # (it was RAW: the event lost; tests/protocol/test_invalid_utf8.py)
    e = parse_event(b'{"type":"user","x":"\xff\xfe"}')
    assert e.type is EventType.USER
    assert e.data["x"] == "\ufffd\ufffd"


@pytest.mark.parametrize(
    "obj",
    [
        {"type": "brand_new_event", "x": {"y": 1}},
        {"type": "system", "subtype": "task_notification", "n": 1},
        {"type": "thinking", "subtype": "redacted"},
        {"type": "tool_call", "subtype": "progress", "call_id": "c"},
        {"subtype": "init"},
        {"type": 7},
    ],
)
def test_unknown_types_and_subtypes_keep_everything(obj: dict[str, object]) -> None:
    e = parse_event(orjson.dumps(obj))
    assert e.type is EventType.UNKNOWN
    assert e.data == obj


def test_connection_retry_and_interaction_query() -> None:
    assert parse_event('{"type":"connection","subtype":"reconnecting"}').type is EventType.CONNECTION
    assert parse_event('{"type":"retry","subtype":"starting"}').type is EventType.RETRY
    e = parse_event('{"type":"interaction_query","subtype":"request","query_type":"x","query":{}}')
    assert e.type is EventType.INTERACTION_QUERY and e.subtype == "request"


def test_assistant_shapes() -> None:
    delta = parse_event('{"type":"assistant","message":{"content":[{"type":"text","text":"a"}]},'
                        '"timestamp_ms":5}')
    recap = parse_event('{"type":"assistant","message":{"content":[{"type":"text","text":"a"}]},'
                        '"timestamp_ms":5,"model_call_id":"r-0-abcd"}')
    final = parse_event('{"type":"assistant","message":{"content":[{"type":"text","text":"a"}]}}')
    flat = parse_event('{"type":"assistant","text":"a","timestamp_ms":5}')
    string_content = parse_event('{"type":"assistant","message":{"content":"plain"}}')
    blocks = parse_event('{"type":"assistant","message":{"content":[{"type":"text","text":"a"},'
                         '{"type":"image","url":"u"},{"type":"text","text":"b"}]}}')
    assert delta.type is EventType.ASSISTANT_DELTA and delta.timestamp_ms == 5
    assert recap.type is EventType.ASSISTANT and recap.model_call_id == "r-0-abcd"
    assert final.type is EventType.ASSISTANT
    assert flat.type is EventType.ASSISTANT_DELTA and flat.text == "a"
    assert string_content.text == "plain"
    assert blocks.text == "ab"


def test_result_forms() -> None:
    ok = parse_event('{"type":"result","subtype":"success","is_error":false,"result":"r",'
                     '"usage":{"inputTokens":1,"outputTokens":2,"cacheReadTokens":3,'
                     '"cacheWriteTokens":4}}')
    assert ok.type is EventType.RESULT_SUCCESS and ok.text == "r"
    assert ok.usage is not None and ok.usage.to_dict() == {
        "input_tokens": 1, "output_tokens": 2, "cache_read_tokens": 3, "cache_write_tokens": 4}
    err_result = parse_event('{"type":"result","subtype":"error","is_error":true,"result":"bad"}')
    assert err_result.type is EventType.RESULT_ERROR and err_result.error == "bad"
    flagged = parse_event('{"type":"result","subtype":"success","is_error":true,"error":"x"}')
    assert flagged.type is EventType.RESULT_ERROR and flagged.text == "x"
    assert ok.error is None and ok.is_result


def test_string_timestamps_and_missing_fields_are_tolerated() -> None:
    e = parse_event('{"type":"thinking","subtype":"delta","text":"t","timestamp_ms":"17"}')
    assert e.timestamp_ms == 17
    assert parse_event('{"type":"user"}').text is None


@pytest.mark.parametrize(
    ("key", "kind"),
    [("readToolCall", ToolKind.READ), ("semSearchToolCall", ToolKind.SEM_SEARCH),
     ("updateTodosToolCall", ToolKind.TODOS), ("getMcpToolsToolCall", ToolKind.MCP_TOOLS),
     ("readLintsToolCall", ToolKind.UNKNOWN), ("taskToolCall", ToolKind.UNKNOWN),
     ("Shell", ToolKind.SHELL), ("StrReplace", ToolKind.EDIT), ("TodoWrite", ToolKind.TODOS),
     ("SemanticSearch", ToolKind.SEM_SEARCH), ("WebFetch", ToolKind.WEB_FETCH)],
)
def test_kinds(key: str, kind: ToolKind) -> None:
    assert kind_for_key(key) is kind


def tool_event(inner: dict[str, object], subtype: str = "completed") -> AgentEvent:
    return parse_event(orjson.dumps({"type": "tool_call", "subtype": subtype, "call_id": "c",
                                     "tool_call": inner}))


@pytest.mark.parametrize(
    ("result", "status"),
    [({"success": {}}, ToolStatus.SUCCEEDED), ({"failure": {"exitCode": 1}}, ToolStatus.FAILED),
     ({"rejected": {"reason": ""}}, ToolStatus.REJECTED),
     ({"permissionDenied": {}}, ToolStatus.DENIED), ({"error": {"message": "m"}}, ToolStatus.ERROR),
     ({"spawnError": {}}, ToolStatus.ERROR), ({"timeout": {}}, ToolStatus.TIMEOUT),
     ({"toolNotFound": {}}, ToolStatus.ERROR), ({"serverNotFound": {}}, ToolStatus.ERROR),
     ({"success": {"isError": True, "content": []}}, ToolStatus.FAILED),
     ({"isBackground": False, "success": {}}, ToolStatus.SUCCEEDED)],
)
def test_statuses(result: dict[str, object], status: ToolStatus) -> None:
    tc = tool_event({"shellToolCall": {"args": {"command": "x"}, "result": result}}).tool_call
    assert tc is not None and tc.status is status


def test_unknown_tool_kind_is_generic_not_an_error() -> None:
    e = tool_event({"readLintsToolCall": {"args": {"paths": ["a"]},
                                          "result": {"success": {"diagnostics": []}}}})
    tc = e.tool_call
    assert tc is not None
    assert (tc.kind, tc.name, tc.status) == (ToolKind.UNKNOWN, "readLintsToolCall",
                                             ToolStatus.SUCCEEDED)
    assert tc.args == {"paths": ["a"]}
    assert tc.output == '{"diagnostics":[]}'


def test_legacy_function_shape() -> None:
    tc = tool_event({"function": {"name": "custom", "arguments": '{"a": 1}'}}, "started").tool_call
    assert tc is not None
    assert (tc.kind, tc.name, tc.args, tc.status) == (ToolKind.FUNCTION, "custom", {"a": 1},
                                                      ToolStatus.RUNNING)


def test_mcp_output_joins_nested_text() -> None:
    tc = tool_event({"mcpToolCall": {"args": {"name": "s-t", "toolName": "t",
                                              "providerIdentifier": "s"},
                                     "result": {"success": {"content": [
                                         {"text": {"text": "one"}}, {"text": {"text": "two"}}]}}}}
                    ).tool_call
    assert tc is not None
    assert tc.mcp_output == "one\ntwo" == tc.output
    assert (tc.mcp_server, tc.mcp_tool) == ("s", "t")


def test_grep_glob_search_conveniences() -> None:
    grep = tool_event({"grepToolCall": {"args": {"pattern": "TODO", "path": "."}, "result": {
        "success": {"workspaceResults": {"/w": {"content": {"matches": [
            {"file": "a.py", "matches": [{"lineNumber": 3, "content": "# TODO x",
                                          "isContextLine": False},
                                         {"lineNumber": 4, "content": "ctx",
                                          "isContextLine": True}]}]}}}}}}}).tool_call
    assert grep is not None and grep.grep_matches == [("a.py", 3, "# TODO x")]
    assert grep.output == "a.py:3:# TODO x" and grep.summary() == "TODO"
    glob = tool_event({"globToolCall": {"args": {"globPattern": "*.py"},
                                        "result": {"success": {"files": ["a.py", "b.py"],
                                                               "totalFiles": 2}}}}).tool_call
    assert glob is not None and glob.files == ["a.py", "b.py"] and glob.output == "a.py\nb.py"
    search = tool_event({"webSearchToolCall": {"args": {"searchTerm": "q"}, "result": {
        "success": {"references": [{"title": "T", "url": "https://x", "chunk": "c"}]}}}}).tool_call
    assert search is not None and search.references[0]["url"] == "https://x"
    assert search.output == "T — https://x"


def test_shell_failure_shows_its_output() -> None:
    tc = tool_event({"shellToolCall": {"args": {"command": "false"}, "result": {"failure": {
        "exitCode": 1, "stdout": "", "stderr": "boom\n"}}}}).tool_call
    assert tc is not None
    assert (tc.status, tc.exit_code, tc.output) == (ToolStatus.FAILED, 1, "boom\n")


def test_round_trip_is_lossless() -> None:
    line = ('{"type":"tool_call","subtype":"started","call_id":"a\\nb","tool_call":'
            '{"xToolCall":{"args":{"k":[1,2,{"z":null}]}}},"future_field":{"q":1.5}}')
    e = parse_event(line)
    back = AgentEvent.from_dict(orjson.loads(orjson.dumps(e.to_dict())))
    assert back == e
    assert back.data["future_field"] == {"q": 1.5}
    assert e.call_id == "a\nb"


def test_parse_event_accepts_dicts_and_str() -> None:
    assert parse_event({"type": "user", "message": {"content": "hi"}}).text == "hi"
    assert parse_event('{"type":"user"}').type is EventType.USER


def test_strip_ansi_osc_and_csi() -> None:
    assert strip_ansi("\x1b]0;title\x07a\x1b[2Kb\x1b(Bc") == "abc"


@pytest.mark.parametrize("text, shown", [
    ("\x1b7rm -rf ~/work\x1b8ls -la", "rm -rf ~/workls -la"),  # save/restore the cursor
    ("rm -rf ~ \x1bc", "rm -rf ~ "),  # full reset (clears the screen)
    ("a\x1b=b\x1b>c", "abc"),  # keypad modes
    ("a\x1b#8b", "ab"),  # fill the screen with E
    ("a\x1bPq#0;1;1;1\x1b\\b", "ab"),  # a device control string, payload included
    ("a\x1b_hidden\x1b\\b", "ab"),  # an application program command
    ("a\x9d0;title\x9cb\x9b31mc", "abc"),  # 8-bit OSC and CSI
    ("a\x85b\x8ec", "abc"),  # other 8-bit controls
    ("trailing\x1b", "trailing"),  # a lone escape
])
def test_strip_ansi_leaves_no_escape_the_terminal_would_obey(text: str, shown: str) -> None:
    assert strip_ansi(text) == shown


@pytest.mark.parametrize("stamp", ['"\\u00b2"', '"٣"', '"' + "9" * 5000 + '"', "true", '"-1"'])
def test_a_timestamp_the_agent_wrote_oddly_is_none_never_an_error(stamp: str) -> None:
    # hostile or broken agent output is data: reading a derived field never raises
    e = parse_event('{"type":"assistant","timestamp_ms":' + stamp
                    + ',"message":{"content":[{"type":"text","text":"x"}]}}')
    assert e.timestamp_ms is None and e.text == "x"
    assert e.to_dict()["timestamp_ms"] is None


@pytest.mark.timeout(60)
@pytest.mark.parametrize("introducer", ["\x90", "\x9d", "\x1b]", "\x1bP"])
def test_strip_ansi_is_linear_on_strings_that_never_end(introducer: str) -> None:
    # the agent's stderr goes through it on the event loop: an unterminated string introducer
    # repeated (1 MB here) takes well under a second; a rescan to the end from each one took
    # hours (6.5 s for 60 KB)
    text = (introducer + "a") * (1_000_000 // (len(introducer) + 1))
    assert strip_ansi(text).count("a") == len(text) // (len(introducer) + 1)
