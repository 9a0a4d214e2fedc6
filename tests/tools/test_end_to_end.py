"""Issue 15, end to end on the simulator: ``@tool`` functions called over a real MCP
connection, their results in the answer, the calls linked (``call.local``), the workspace's
``.cursor/`` exactly as before after success, failure and cancel."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import AsyncCursorAgentClient, ConversationSession, CursorAgentClient, EventType
from cursor_agent_api.protocol import ToolKind, ToolStatus

from .conftest import PROMPT, TOOLS, tree_hash


def _check_calls(result: Any) -> None:
    assert result.success, result.error
    assert '`lookup_order` returned: {"id": "A1", "status": "shipped", "items": 3}' in result.result
    assert "`track_parcel` failed: LookupError: carrier unreachable for P-9" in result.result
    ok, bad = (c for c in result.tool_calls if c.kind is ToolKind.MCP)
    schemas = [c for c in result.tool_calls if c.kind is ToolKind.MCP_TOOLS]  # looked up first
    assert [(c.mcp_server, c.args.get("toolName")) for c in schemas] == [
        (ok.mcp_server, "lookup_order"), (ok.mcp_server, "track_parcel")]
    assert '"description": "Look up an order by its id."' in (schemas[0].mcp_output or "")
    assert (ok.kind, ok.mcp_tool, ok.status) == (ToolKind.MCP, "lookup_order", ToolStatus.SUCCEEDED)
    assert ok.is_own_tool and ok.local is not None
    assert ok.local.arguments == {"order_id": "A1"}
    assert ok.local.value == {"id": "A1", "status": "shipped", "items": 3}
    assert ok.local.duration_ms >= 0 and ok.local.ok
    assert (bad.mcp_tool, bad.status) == ("track_parcel", ToolStatus.FAILED)
    assert "carrier unreachable for P-9" in (bad.mcp_output or "")
    assert isinstance(bad.local.exception, LookupError)
    assert bad.local.error == "LookupError: carrier unreachable for P-9"
    assert bad.to_dict()["own_tool"] is True and bad.to_dict()["local"]["ok"] is False


def test_sync_client_calls_the_tools(sim: Callable[..., Any], workspace: Path) -> None:
    before = tree_hash(workspace / ".cursor")
    with CursorAgentClient(sim(), tools=TOOLS) as client:
        _check_calls(client.query(PROMPT))
        assert tree_hash(workspace / ".cursor") == before
        _check_calls(client.query(PROMPT))  # the same server serves the next turn
    assert tree_hash(workspace / ".cursor") == before


def test_async_client_and_stream(sim: Callable[..., Any], user_workspace: Path) -> None:
    before = tree_hash(user_workspace / ".cursor")

    async def main() -> tuple[Any, list[Any]]:
        async with AsyncCursorAgentClient(sim(), tools=TOOLS) as client:
            events = [e async for e in client.query_stream(PROMPT)]
            return await client.query(PROMPT), events

    result, events = asyncio.run(main())
    _check_calls(result)
    assert sum(e.type is EventType.TOOL_CALL_COMPLETED for e in events) == 4  # 2 schemas, 2 calls
    assert tree_hash(user_workspace / ".cursor") == before


def test_session_passes_tools(sim: Callable[..., Any], user_workspace: Path) -> None:
    with ConversationSession(sim(), tools=TOOLS) as session:
        _check_calls(session.send(PROMPT))


def test_failure_and_cancel_restore_the_workspace(sim: Callable[..., Any], workspace: Path) -> None:
    before = tree_hash(workspace / ".cursor")
    with CursorAgentClient(sim("crash"), tools=TOOLS) as client:
        failed = client.query(PROMPT)
    assert not failed.success
    assert tree_hash(workspace / ".cursor") == before
    with CursorAgentClient(sim("silence"), tools=TOOLS) as client:
        stream = client.query_stream(PROMPT)
        first = next(iter(stream))
        assert first.type is EventType.SYSTEM_INIT
        assert tree_hash(workspace / ".cursor") != before  # the entries are there during the turn
        stream.cancel()
        assert stream.wait().cancelled
    assert tree_hash(workspace / ".cursor") == before


def test_without_tools_nothing_is_touched(sim: Callable[..., Any], workspace: Path) -> None:
    before = tree_hash(workspace / ".cursor")
    with CursorAgentClient(sim()) as client:
        result = client.query(PROMPT)
    assert result.success and not result.tool_calls
    assert tree_hash(workspace / ".cursor") == before


@pytest.mark.parametrize("force", [False, True])
def test_mcp_servers_from_the_config(sim: Callable[..., Any], user_workspace: Path, force: bool) -> None:
    """A stdio server declared in AgentConfig(mcp_servers=...) reaches the agent; its tools are
    not allowlisted, so without --force the call is rejected (only our own tools are allowed)."""
    import sys

    server = Path(__file__).with_name("echo_server.py")
    before = tree_hash(user_workspace / ".cursor")
    config = sim(mcp_servers={"echo": {"command": sys.executable, "args": [str(server)]}},
                 force_approve=force)
    with CursorAgentClient(config) as client:
        result = client.query('Please echo {"text": "hi there"}')
    assert result.success, result.error
    (call,) = (c for c in result.tool_calls if c.kind is ToolKind.MCP)
    assert (call.mcp_server, call.mcp_tool, call.is_own_tool, call.local) == ("echo", "echo", False, None)
    if force:
        assert call.status is ToolStatus.SUCCEEDED and call.mcp_output == "echo: hi there"
        assert "`echo` returned: echo: hi there" in result.result
    else:
        assert call.status is ToolStatus.REJECTED
    assert tree_hash(user_workspace / ".cursor") == before


def test_the_relay_fallback(sim: Callable[..., Any], user_workspace: Path, monkeypatch: pytest.MonkeyPatch
                            ) -> None:
    """CURSOR_AGENT_API_TOOLS_TRANSPORT=relay: a stdio entry reaching the host over a private
    Unix socket, for a CLI that does not expand ${env:...} in headers; the token only in the
    agent's environment (the relay inherits it), never in the file."""
    monkeypatch.setenv("CURSOR_AGENT_API_TOOLS_TRANSPORT", "relay")
    before = tree_hash(user_workspace / ".cursor")
    seen: list[str] = []
    with CursorAgentClient(sim(), tools=TOOLS) as client:
        stream = client.query_stream(PROMPT)
        for _ in stream:
            if not seen:
                seen.append((user_workspace / ".cursor" / "mcp.json").read_text())
        result = stream.wait()
        token = client._tools.server.token
        assert token in stream._run.env.values() and token not in " ".join(stream._run.argv)
    _check_calls(result)
    assert '"command"' in seen[0] and "cursor_agent_api.tools.relay" in seen[0]
    assert "Bearer" not in seen[0] and token not in seen[0]
    assert tree_hash(user_workspace / ".cursor") == before


def test_close_during_a_turn_waits_for_it(sim: Callable[..., Any], user_workspace: Path) -> None:
    """close() while a stream runs: the tools keep being served until that turn has ended."""
    client = CursorAgentClient(sim(), tools=TOOLS)
    stream = client.query_stream(PROMPT)
    client.close()
    result = stream.wait()
    _check_calls(result)


def test_close_from_the_loop_thread_is_refused_and_lets_nothing_go(sim: Callable[..., Any],
                                                                   workspace: Path) -> None:
    """close() from the client's own loop thread (a callback) cannot wait for the tool server
    to stop: a RuntimeError that says so, and the client still holds its loop, so close() from
    another thread then stops it (before: the hold was let go first, and the loop ran for ever)."""
    import threading

    client = CursorAgentClient(sim(), tools=TOOLS)
    _check_calls(client.query(PROMPT))
    portal = client._portal
    thread = portal._thread
    assert thread is not None
    said: list[BaseException | None] = []
    done = threading.Event()

    def on_the_loop() -> None:
        try:
            client.close()
            said.append(None)
        except BaseException as e:  # (what close() raised: checked below)
            said.append(e)
        done.set()

    portal.loop.call_soon_threadsafe(on_the_loop)
    assert done.wait(30)
    assert isinstance(said[0], RuntimeError) and "loop thread" in str(said[0])
    assert thread.is_alive()
    client.close()
    thread.join(30)
    assert not thread.is_alive()


def test_a_tool_that_calls_sys_exit_fails_as_a_call_not_the_client(sim: Callable[..., Any],
                                                                     workspace: Path) -> None:
    # argparse and click call sys.exit() on bad input, and the agent's arguments are untrusted:
    # SystemExit from a tool is that call's failure, not the end of the client's loop thread
    import sys

    from cursor_agent_api.tools import tool

    @tool
    def parse_flags(flags: str) -> str:
        """Parse command-line flags."""
        sys.exit(2)

    @tool
    async def quit_now(code: int) -> str:
        """Quit."""
        raise SystemExit(code)

    before = tree_hash(workspace / ".cursor")
    with CursorAgentClient(sim(), tools=[parse_flags, quit_now]) as client:
        result = client.query('Check parse_flags {"flags": "--bad"} and quit_now {"code": 3}')
        assert result.success, result.error
        assert "`parse_flags` failed: SystemExit: 2" in result.result
        assert "`quit_now` failed: SystemExit: 3" in result.result
        calls = [c for c in result.tool_calls if c.kind is ToolKind.MCP]
        assert [(c.mcp_tool, c.status) for c in calls] == [
            ("parse_flags", ToolStatus.FAILED), ("quit_now", ToolStatus.FAILED)]
        assert client.query(PROMPT).success  # the client goes on
    assert tree_hash(workspace / ".cursor") == before
