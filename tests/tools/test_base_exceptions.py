"""A ``@tool`` that raises a ``BaseException`` that is not an ``Exception`` (``pytest.fail()``
in a tool under test, ``KeyboardInterrupt`` from a worker thread, ``GeneratorExit``, a
framework's own) fails as that call, like any exception: an ``isError`` result naming it,
``call.local.error`` set, and the tool server serves the next call and the next turn (it used to
end the SDK's task group: "SSE stream ended without a response", every later turn without tools,
a ``BaseExceptionGroup`` at close, or the sync client's loop thread gone)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import AsyncCursorAgentClient, CursorAgentClient
from cursor_agent_api.protocol import ToolKind, ToolStatus
from cursor_agent_api.tools import Tool, tool
from cursor_agent_api.tools.server import ToolServer

from .conftest import tree_hash


class Abort(BaseException):
    """A framework's own BaseException (as pytest's Failed, gevent's GreenletExit)."""


def _raiser(kind: str) -> Tool:
    if kind == "async Abort":
        @tool
        async def check_stock(sku: str) -> str:
            """Check the stock."""
            raise Abort("framework abort")
        return check_stock

    def body() -> str:
        if kind == "Abort":
            raise Abort("framework abort")
        if kind == "pytest.fail":
            pytest.fail("this tool should not be called")
        if kind == "KeyboardInterrupt":
            raise KeyboardInterrupt
        raise GeneratorExit("closed")

    @tool
    def check_stock(sku: str) -> str:
        """Check the stock."""
        return body()
    return check_stock


KINDS = {"Abort": "Abort: framework abort", "async Abort": "Abort: framework abort",
         "pytest.fail": "Failed: this tool should not be called",
         "KeyboardInterrupt": "KeyboardInterrupt", "GeneratorExit": "GeneratorExit: closed"}


@pytest.mark.parametrize("kind", list(KINDS))
def test_invoke_turns_it_into_an_error_result(kind: str) -> None:
    record = asyncio.run(_raiser(kind).invoke({"sku": "A"}))
    assert record.error == KINDS[kind] and record.texts == [KINDS[kind]]
    assert not record.ok and isinstance(record.exception, BaseException)


@pytest.mark.parametrize("kind", ["Abort", "KeyboardInterrupt", "pytest.fail"])
def test_sync_client_two_turns(sim: Callable[..., Any], workspace: Path, kind: str) -> None:
    before = tree_hash(workspace / ".cursor")
    with CursorAgentClient(sim(), tools=[_raiser(kind)]) as client:
        for _ in range(2):  # the server serves the next turn too
            result = client.query('Use check_stock {"sku": "A"}')
            assert result.success, result.error
            (call,) = [c for c in result.tool_calls if c.kind is ToolKind.MCP]
            assert call.status is ToolStatus.FAILED, result.result
            assert call.local is not None and call.local.error == KINDS[kind]
            assert f"`check_stock` failed: {KINDS[kind]}" in result.result
    assert tree_hash(workspace / ".cursor") == before


def test_async_client_two_turns(sim: Callable[..., Any], user_workspace: Path) -> None:
    async def main() -> list[Any]:
        async with AsyncCursorAgentClient(sim(), tools=[_raiser("async Abort")]) as client:
            return [await client.query('Use check_stock {"sku": "A"}') for _ in range(2)]

    for result in asyncio.run(main()):
        (call,) = [c for c in result.tool_calls if c.kind is ToolKind.MCP]
        assert call.local is not None and call.local.error == "Abort: framework abort", result.result


def test_a_server_whose_task_died_is_not_running_and_starts_again(caplog: pytest.LogCaptureFixture
                                                                 ) -> None:
    @tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    async def main() -> tuple[bool, bool, bool]:
        server = ToolServer([ping])
        await server.start()
        task = server._task
        assert task is not None
        task.cancel()  # whatever ended it (the SDK's task group, uvicorn): it is gone
        await asyncio.wait({task})
        was_running = server.running
        await server.start()  # serves again, on a new task
        again = server.running
        await server.stop()
        return was_running, again, server.running

    assert asyncio.run(main()) == (False, True, False)


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order by its id."""
    return f"{order_id}: shipped"


@pytest.mark.parametrize("transport", ["acp", "print"])
def test_a_chat_calls_the_tools_again_after_their_server_restarted(
        sim: Callable[..., Any], tmp_path: Path, transport: str) -> None:
    """Review 53: a server whose task died serves again on a new port, but an ACP session the
    client held was never given it (mcpServers go only in session/new and session/load): every
    later turn of that chat called the dead port. A held session whose tool servers' addresses
    changed is now loaded again. (Print mode, each turn a new agent: the control.)"""
    extra: dict[str, Any] = {"transport": "acp", "permission_mode": "allow"} \
        if transport == "acp" else {}

    async def main() -> tuple[Any, Any]:
        client = AsyncCursorAgentClient(sim(workspace=str(tmp_path), **extra), tools=[lookup_order])
        try:
            first = await client.query('lookup_order {"order_id": "A1"}')
            server = client._tools.server  # type: ignore[union-attr]
            task = server._task
            assert task is not None
            task.cancel()  # whatever ended it: it is gone
            await asyncio.wait({task})
            again = await client.query('lookup_order {"order_id": "A2"}',
                                       resume=first.session_id)
            return first, again
        finally:
            await client.aclose()

    first, again = asyncio.run(main())
    assert [c.local.value for c in first.tool_calls if c.kind is ToolKind.MCP] == ["A1: shipped"]
    calls = [c for c in again.tool_calls if c.kind is ToolKind.MCP]
    assert [c.local.value if c.local else None for c in calls] == ["A2: shipped"], again.result
    assert again.session_id == first.session_id  # the same chat
