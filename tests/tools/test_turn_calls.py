"""A tool call belongs to the turn that made it: a turn that ends (cancelled, timed out) cancels
its calls still in flight, and ``call.local`` links only calls made during the linking turn."""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cursor_agent_api import CursorAgentClient
from cursor_agent_api.protocol import ToolKind
from cursor_agent_api.tools import tool
from cursor_agent_api.tools.functions import LocalInvocation
from cursor_agent_api.tools.server import ToolServer

PROMPT = 'Use charge_card {"order_id": "A1"}'


def test_a_cancelled_turn_cancels_its_call_and_the_next_turn_links_its_own(
        sim: Callable[..., Any], workspace: Path) -> None:
    entered, cancelled = threading.Event(), threading.Event()
    log: list[str] = []

    @tool
    async def charge_card(order_id: str) -> str:
        """Charge the card of an order (slow the first time)."""
        log.append("start")
        if len(log) == 1:
            entered.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                log.append("cancelled")
                cancelled.set()
                raise
        log.append("finished")
        return f"charged {order_id} ({log.count('start')})"

    with CursorAgentClient(sim(), tools=[charge_card]) as client:
        stream = client.query_stream(PROMPT)
        assert entered.wait(60)  # bounds, not timings
        stream.cancel()
        assert stream.wait().cancelled
        assert cancelled.wait(60)  # the call of the ended turn was cancelled
        result = client.query(PROMPT)
    assert result.success, result.error
    (call,) = [c for c in result.tool_calls if c.kind is ToolKind.MCP]
    assert call.local is not None and call.local.value == "charged A1 (2)"
    assert log == ["start", "cancelled", "start", "finished"]
    assert "`charge_card` returned: charged A1 (2)" in result.result


def test_claim_takes_only_calls_made_since_the_turn_began() -> None:
    server = ToolServer([])
    server._unclaimed.append((1.0, LocalInvocation("t", {"a": 1}, value="old")))
    server._unclaimed.append((5.0, LocalInvocation("t", {"a": 1}, value="new")))
    got = server.claim("t", {"a": 1}, since=3.0)
    assert got is not None and got.value == "new"
    assert server.claim("t", {"a": 1}, since=3.0) is None
    server.end_calls(before=math.inf)  # no turn is live: nothing left to claim
    assert server.claim("t", {"a": 1}) is None
