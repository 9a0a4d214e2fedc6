"""A tool result up to the tool server's documented bound (``MAX_RESULT_BYTES``) reaches the
agent, through the relay and the simulator's MCP client too (both had the ``mcp`` SDK's default
1 MiB SSE event limit: the agent got a transport error while ``call.local.ok`` said the value
arrived); over the bound the agent gets an ``isError`` result naming the size and the bound, and
``call.local.ok`` is False."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import CursorAgentClient
from cursor_agent_api.protocol import ToolKind, ToolStatus
from cursor_agent_api.tools import tool
from cursor_agent_api.tools.server import MAX_RESULT_BYTES


@pytest.mark.parametrize("transport", ["http", "relay"])
def test_results_up_to_the_bound_arrive_and_over_it_are_an_error(
        sim: Callable[..., Any], user_workspace: Path, monkeypatch: pytest.MonkeyPatch,
        transport: str) -> None:
    monkeypatch.setenv("CURSOR_AGENT_API_TOOLS_TRANSPORT", transport)
    big = 2 * 1024 * 1024  # twice the SDK's default event limit, well under the bound

    @tool
    def read_log(size: int) -> str:
        """Return the log."""
        return "x" * size

    @tool
    def tail_log() -> str:
        """Return the log's tail."""
        return "tail"

    with CursorAgentClient(sim(), tools=[read_log, tail_log]) as client:
        result = client.query(f'Use read_log {{"size": {big}}} and tail_log')
        over = client.query(f'Use read_log {{"size": {MAX_RESULT_BYTES}}} and tail_log')
    assert result.success, result.error
    first, tail = (c for c in result.tool_calls if c.kind is ToolKind.MCP)
    assert first.status is ToolStatus.SUCCEEDED, result.result[:300]
    assert first.local is not None and first.local.ok and len(first.local.texts[0]) == big
    assert len(first.mcp_output or "") >= big  # the agent has it all
    assert tail.status is ToolStatus.SUCCEEDED

    assert over.success, over.error
    refused, tail = (c for c in over.tool_calls if c.kind is ToolKind.MCP)
    assert refused.status is ToolStatus.FAILED, over.result[:300]
    assert refused.local is not None and not refused.local.ok and refused.local.value is None
    error = refused.local.error or ""
    assert f"{MAX_RESULT_BYTES:,} bytes" in error and "over the tool server's bound" in error, error
    assert error in (refused.mcp_output or "")  # the agent was told the same
    assert tail.status is ToolStatus.SUCCEEDED  # the next call of the turn is fine
