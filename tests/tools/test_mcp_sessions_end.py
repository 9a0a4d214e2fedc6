"""The MCP sessions an agent opens on the client's tool server end with it: with a print-mode
turn (even one cancelled while a tool ran: its agent never says goodbye), and in ACP with the
session the client lets go of (which the next turn on it loads again, its tools with it). The
SDK also ends idle ones and caps them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import AsyncCursorAgentClient
from cursor_agent_api.protocol import ToolKind
from cursor_agent_api.tools import server as server_module
from cursor_agent_api.tools import tool

from .conftest import lookup_order


def _manager(server: server_module.ToolServer) -> Any:
    """The SDK's session manager of a started server."""
    manager = getattr(server, "_manager", None)
    if manager is None:  # (before the fix: the one of the Starlette app)
        import gc

        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        manager, = [o for o in gc.get_objects() if isinstance(o, StreamableHTTPSessionManager)
                    and o._task_group is not None]
    return manager


def _open(client: AsyncCursorAgentClient) -> int:
    """The MCP sessions the client's tool server holds (the SDK's count)."""
    return len(_manager(client._tools.server)._server_instances)


async def _settled(client: AsyncCursorAgentClient) -> None:
    """Wait for the MCP sessions being ended (the turn's end has begun it)."""
    await asyncio.gather(*getattr(client._tools, "_ending", ()))


@pytest.mark.parametrize("tools_transport", ["http", "relay"])
def test_a_cancelled_print_turn_ends_its_agents_mcp_session(
        sim: Callable[..., Any], cursor_sim_workspace: Path, monkeypatch: pytest.MonkeyPatch,
        tools_transport: str) -> None:
    monkeypatch.setenv("CURSOR_AGENT_API_TOOLS_TRANSPORT", tools_transport)

    @tool
    async def slow(x: str) -> str:
        """Slow."""
        entered.set()
        await asyncio.Event().wait()
        return "never"

    async def main() -> list[int]:
        client = AsyncCursorAgentClient(sim(), tools=[slow])
        seen = []
        try:
            for _ in range(2):
                entered.clear()
                stream = client.query_stream('slow {"x": "y"}')
                reading = asyncio.ensure_future(stream.wait())
                await entered.wait()
                seen.append(_open(client))
                stream.cancel()
                assert (await reading).cancelled
                await _settled(client)
                seen.append(_open(client))
        finally:
            await client.aclose()
        return seen

    entered = asyncio.Event()
    assert asyncio.run(main()) == [1, 0, 1, 0]  # (1, 1, 2, 2: each killed agent's was kept)


def test_an_acp_session_let_go_ends_its_mcp_session_and_loads_again_with_its_tools(
        sim: Callable[..., Any], workspace: Path) -> None:
    async def main() -> tuple[list[int], Any, Any]:
        client = AsyncCursorAgentClient(sim(transport="acp", permission_mode="allow"),
                                        tools=[lookup_order])
        seen = []
        try:
            first = await client.query("say hello")
            (transport,) = client._acp.transports.values()
            transport.max_idle_sessions = 1
            for _ in range(3):
                assert (await client.query("say hello")).success
                await _settled(client)
                seen.append(_open(client))
            again = await client.query('lookup_order {"order_id": "A1"}', resume=first.session_id)
            await _settled(client)
            seen.append(_open(client))
        finally:
            await client.aclose()
        return seen, first, again

    seen, first, again = asyncio.run(main())
    assert seen == [1, 1, 1, 1]  # (2, 3, 4, 5: one per session the agent ever had)
    assert again.success and again.session_id == first.session_id, again.error
    (call,) = [c for c in again.tool_calls if c.kind is ToolKind.MCP]
    assert call.local is not None and call.local.value["status"] == "shipped"


def test_the_sdk_ends_idle_mcp_sessions_and_caps_them() -> None:
    async def main() -> tuple[Any, Any]:
        server = server_module.ToolServer([lookup_order])
        await server.start()
        try:
            manager = _manager(server)
            return manager.session_idle_timeout, manager.max_sessions
        finally:
            await server.stop()

    assert asyncio.run(main()) == (600.0, 1000)  # (the SDK's: 30 minutes, 10,000)
