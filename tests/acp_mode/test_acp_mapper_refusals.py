"""A call the agent refused on its own (ask or plan mode, its deny list, team policy) is not a
success: ACP reports it ``completed`` with no output (ACP.md §6), and the mapper infers from
the missing output that it did not run (ACP.md §7: a shell that ran has ``rawOutput``, an edit
its diff). Calls that ran fold as before; the client's own answers stay the client's."""

from __future__ import annotations

from typing import Any

import pytest

from cursor_agent_api.protocol import ToolKind, ToolStatus, Transcript
from cursor_agent_api.protocol.acp_mapper import AcpMapper
from cursor_agent_api.protocol.tools import ToolCall

SID = "s1"


def fold(m: AcpMapper, *frames: dict[str, Any]) -> ToolCall:
    events = []
    for frame in frames:
        events += m.update(frame)
    t = Transcript()
    for e in events:
        t.add(e)
    (call,) = t.tool_calls
    return call


def start(cid: str, kind: str, title: str, raw_input: dict[str, Any]) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call", "toolCallId": cid, "kind": kind, "title": title,
            "status": "pending", "rawInput": raw_input}


def done(cid: str, **fields: Any) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call_update", "toolCallId": cid, "status": "completed", **fields}


REFUSED = [
    pytest.param(start("c", "execute", "`touch t.txt`", {"command": "touch t.txt"}), ToolKind.SHELL,
                 id="shell"),
    pytest.param(start("c", "edit", "Edit File", {"path": "/w/y.txt"}), ToolKind.EDIT, id="edit"),
    pytest.param(start("c", "delete", "Delete File", {"path": "/w/y.txt"}), ToolKind.DELETE,
                 id="delete"),
    pytest.param(start("c", "read", "a.txt", {"path": "a.txt"}), ToolKind.READ, id="read"),
]


@pytest.mark.parametrize(("first", "kind"), REFUSED)
@pytest.mark.parametrize("ending", [{}, {"rawOutput": {}}, {"content": []}], ids=["bare", "{}", "[]"])
def test_a_completion_without_output_is_a_refusal(first: dict[str, Any], kind: ToolKind,
                                                   ending: dict[str, Any]) -> None:
    call = fold(AcpMapper(SID), first, {"sessionUpdate": "tool_call_update", "toolCallId": "c",
                                        "status": "in_progress"}, done("c", **ending))
    assert call.kind is kind
    assert call.status is ToolStatus.REJECTED
    assert "did not run" in (call.error_message or "")
    assert call.outcome_value.get("inferred") is True and call.output == call.error_message
    assert call.diff is None and call.exit_code is None


def test_a_read_completed_with_permission_denied_is_denied() -> None:
    call = fold(AcpMapper(SID), start("r", "read", "secret", {"path": "secret"}),
                done("r", content=[{"type": "content", "content": {"type": "text",
                                                                   "text": "Permission denied"}}]))
    assert call.status is ToolStatus.DENIED and call.content is None


def test_calls_that_ran_still_succeed_or_fail() -> None:
    shell = fold(AcpMapper(SID), start("a", "execute", "`ls`", {"command": "ls"}),
                 done("a", rawOutput={"exitCode": 0, "stdout": "", "stderr": ""}))
    assert shell.status is ToolStatus.SUCCEEDED and shell.exit_code == 0 and shell.output == ""
    failing = fold(AcpMapper(SID), start("b", "execute", "`false`", {"command": "false"}),
                   done("b", rawOutput={"exitCode": 1, "stdout": "", "stderr": ""}))
    assert failing.status is ToolStatus.FAILED
    diff = [{"type": "diff", "path": "/w/y.txt", "oldText": "-- /dev/null",
             "newText": "++ b/w/y.txt\nhi\n"}]
    edit = fold(AcpMapper(SID), start("e", "edit", "Edit File", {}), done("e", content=diff))
    assert edit.status is ToolStatus.SUCCEEDED and edit.path == "/w/y.txt"
    removed = fold(AcpMapper(SID), start("d", "edit", "Delete File", {"path": "/w/y.txt"}),
                   done("d", content=[{"type": "diff", "path": "/w/y.txt", "oldText": "hi\n",
                                       "newText": ""}]))
    assert removed.status is ToolStatus.SUCCEEDED
    read = fold(AcpMapper(SID), start("r", "read", "a.txt", {"path": "a.txt"}),
                done("r", rawOutput={"content": ""}))  # an empty file
    assert read.status is ToolStatus.SUCCEEDED and read.content == ""


@pytest.mark.parametrize("frame", [
    start("m", "other", "MCP: add", {}),                                   # an MCP call
    start("m", "other", "", {"_toolName": "updateTodos"}),                # todos
    start("m", "search", "Find", {"pattern": "x", "path": "."}),           # no observed shape
    start("m", "fetch", "Fetch https://x.org", {"url": "https://x.org"}),
])
def test_kinds_whose_output_is_not_known_are_not_inferred(frame: dict[str, Any]) -> None:
    call = fold(AcpMapper(SID), frame, done("m"))
    assert call.status is ToolStatus.SUCCEEDED


def test_a_late_output_makes_a_refusal_a_success() -> None:
    # the completion again, enriched (as a late rawOutput always was)
    call = fold(AcpMapper(SID), start("c", "execute", "`ls`", {"command": "ls"}), done("c"),
                done("c", rawOutput={"exitCode": 0, "stdout": "a\n", "stderr": ""}))
    assert call.status is ToolStatus.SUCCEEDED and call.output == "a\n"


def test_the_clients_own_rejection_keeps_its_reason() -> None:
    m = AcpMapper(SID)
    tool = {"toolCallId": "c", "title": "`rm -rf /`", "kind": "execute", "status": "pending",
            "rawInput": {"command": "rm -rf /"}}
    params = {"sessionId": SID, "toolCall": tool, "options": []}
    events = m.permission_request(0, params)
    events += m.permission_decision(0, params, "reject_once", "reject-once", "never")
    events += m.update(done("c"))
    t = Transcript()
    for e in events:
        t.add(e)
    (call,) = t.tool_calls
    assert call.status is ToolStatus.REJECTED and call.error_message == "never"
