"""The server's tool-call views (server/webui.py), which the page's cards show."""

from __future__ import annotations

from cursor_agent_api.server.webui import TEXT_LIMIT, tool_call_view


def test_seed_002_envelope_started_and_completed() -> None:
    started = tool_call_view({"data": {"type": "tool_call", "subtype": "started", "payload": {
        "toolCall": {"id": "shell-1", "shellToolCall": {"name": "shell",
                                                        "args": {"command": "python hi.py"}}}}}})
    completed = tool_call_view({"data": {"type": "tool_call", "subtype": "completed", "payload": {
        "toolCall": {"id": "shell-1", "result": {"exitCode": 0, "stdout": "Hello\n",
                                                 "stderr": ""}}}}})
    assert started is not None and completed is not None
    assert (started["call_id"], started["kind"], started["command"]) == ("shell-1", "shell",
                                                                        "python hi.py")
    # The completion omits the kind: the page keeps the start's (cards.mergeView).
    assert completed["call_id"] == "shell-1"
    assert completed["status"] == "succeeded"
    assert "Hello" in completed["output"]


def test_long_output_is_cut_and_marked() -> None:
    view = tool_call_view({"data": {"type": "tool_call", "subtype": "completed", "call_id": "c",
                                    "tool_call": {"readToolCall": {"args": {"path": "big"},
                                                  "result": {"success": {"content": "x" * (
                                                      TEXT_LIMIT + 10)}}}}}})
    assert view is not None
    assert view["cut"] == ["output"] and "truncated" not in view  # (a list elsewhere in the API)
    assert len(view["output"]) == TEXT_LIMIT


def test_not_a_tool_call() -> None:
    assert tool_call_view({"data": {"type": "assistant"}}) is None
    assert tool_call_view({}) is None


def test_read_range_counts_lines_as_a_person_does() -> None:
    # The CLI reads "alpha\nbeta\n" as lines 1-3 (recording 02); the card says lines 1-2.
    view = tool_call_view({"data": {"type": "tool_call", "subtype": "completed", "call_id": "c",
                                    "tool_call": {"readToolCall": {"args": {"path": "n.txt"},
                                                  "result": {"success": {
                                                      "content": "alpha\nbeta\n",
                                                      "readRange": {"startLine": 1,
                                                                    "endLine": 3}}}}}}})
    assert view is not None and view["read_range"] == [1, 2]
