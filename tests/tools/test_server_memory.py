"""The tool server keeps a call's record only until the turn that made it links it (or ends),
and the calls no turn linked within a count and a byte bound: a client whose tool returns big
values does not grow with its calls."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import types

from cursor_agent_api import CursorAgentClient
from cursor_agent_api.tools import server as server_module
from cursor_agent_api.tools import tool
from cursor_agent_api.tools.functions import LocalInvocation
from cursor_agent_api.tools.server import ToolServer


@tool
def fetch_report(report_id: str) -> str:
    """A report's text."""
    return report_id + "x" * 10_000


def _records() -> list[LocalInvocation]:
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, LocalInvocation)]


def test_a_client_keeps_no_record_of_calls_its_turns_have_linked(
        sim: Callable[..., Any], workspace: Path) -> None:
    config = sim(keep_events=False, keep_content=False)
    with CursorAgentClient(config, tools=[fetch_report]) as client:
        for _ in range(3):
            result = client.query('fetch_report {"report_id": "R1"}')
            assert result.success, result.error
            del result
        assert _records() == []  # (the server kept the last 1000 calls' values)
        assert client._tools.server.calls == 3


def test_calls_no_turn_links_are_kept_within_a_byte_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_module, "_KEEP_UNCLAIMED_BYTES", 25_000, raising=False)
    server = ToolServer([fetch_report])
    params = types.CallToolRequestParams(name="fetch_report", arguments={"report_id": "R"})

    async def calls() -> None:
        for _ in range(5):
            await server._call_tool(None, params)

    asyncio.run(calls())
    assert len(server._unclaimed) == 2  # 2 x 10,001 bytes fit, a third does not
    assert server.calls == 5
    assert server.claim("fetch_report", {"report_id": "R"}) is not None
    assert server._unclaimed_bytes == 10_001
