"""A failed MCP call (``success`` with ``isError: true``, how Cursor reports a tool that
raised) says why: its content's text is the call's ``error_message`` and ``output``
(docs/client.md); they were just "failed"."""

from __future__ import annotations

from cursor_agent_api.protocol import ToolStatus, parse_event


def _completed(result: dict[str, object]) -> str:
    import json

    return json.dumps({
        "type": "tool_call", "subtype": "completed", "call_id": "c1", "session_id": "s",
        "tool_call": {"mcpToolCall": {"args": {"name": "shop-track", "toolName": "track",
                                               "providerIdentifier": "shop", "args": {}},
                                      "result": result}},
    })


def test_a_failed_mcp_calls_text_says_why() -> None:
    from cursor_agent_api.protocol import Transcript

    t = Transcript()
    t.add(parse_event(_completed({"success": {
        "content": [{"text": {"text": "ConnectionError: the tracking service is down"}}],
        "isError": True}})))
    (call,) = t.tool_calls
    assert call.status is ToolStatus.FAILED
    assert call.error_message == "ConnectionError: the tracking service is down"
    assert call.output == "ConnectionError: the tracking service is down"
    assert call.to_dict()["output"] == "ConnectionError: the tracking service is down"


def test_a_failed_mcp_call_without_text_still_says_failed() -> None:
    from cursor_agent_api.protocol import Transcript

    t = Transcript()
    t.add(parse_event(_completed({"success": {"content": [], "isError": True}})))
    (call,) = t.tool_calls
    assert call.status is ToolStatus.FAILED and call.error_message == "failed"
