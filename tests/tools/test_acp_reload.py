"""When a chat's held ACP session is loaded again (review 54): only when its MCP servers moved
or changed as written (tests/tools/test_base_exceptions.py: the tool server started again on a
new port; review 55: another header or environment value), never
because a turn sends them something else (a header or an argument from the turn's own
environment: resolved per turn, they differed at every turn, and each turn replayed the history),
and never while a turn of that session runs (the load replaced the running turn's state and ended
its MCP sessions, and a second prompt went out beside the first)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import AsyncCursorAgentClient
from cursor_agent_api.errors import SessionError
from cursor_agent_api.runtime import acp_transport
from cursor_agent_api.tools import tool


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order by its id."""
    return f"{order_id}: shipped"


def _count_loads(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each session/load: whether a turn of that session was running then."""
    loads: list[bool] = []
    real = acp_transport.AcpTransport._load

    async def counting(self: Any, conn: Any, sid: str, cwd: str, config: Any, **kw: Any) -> Any:
        state = self._sessions.get(sid)
        loads.append(state is not None and state.turn is not None and not state.turn.done)
        return await real(self, conn, sid, cwd, config, **kw)

    monkeypatch.setattr(acp_transport.AcpTransport, "_load", counting)
    return loads


@pytest.mark.parametrize(("mode", "extra"), [
    ("http", None), ("relay", None),
    ("http", {"other": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-T": "${env:HOME}"}}}),
    ("http", {"cmd": {"command": "true", "args": ["${env:CURSOR_AGENT_API_MCP_SCOPE}"]}}),
], ids=["http", "relay", "header-per-turn", "argument-per-turn"])
def test_a_chats_turns_load_nothing_when_nothing_moved(
        sim: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str,
        extra: dict[str, Any] | None) -> None:
    monkeypatch.setenv("CURSOR_AGENT_API_TOOLS_TRANSPORT", mode)
    loads = _count_loads(monkeypatch)

    async def main() -> None:
        client = AsyncCursorAgentClient(sim(transport="acp", permission_mode="allow",
                                            workspace=str(tmp_path)), tools=[lookup_order])
        kw: dict[str, Any] = {"mcp_servers": extra} if extra else {}
        try:
            r = await client.query('lookup_order {"order_id": "A1"}', **kw)
            for i in range(3):
                r = await client.query(f'lookup_order {{"order_id": "B{i}"}}',
                                       resume=r.session_id, **kw)
                assert r.success, r.error
        finally:
            await client.aclose()

    asyncio.run(main())
    assert loads == []


_GATE: dict[str, asyncio.Event] = {}


@tool
async def held_lookup(order_id: str) -> str:
    """Look up an order, when let through."""
    _GATE["asked"].set()
    await _GATE["gate"].wait()
    return f"{order_id}: shipped"


def test_a_second_prompt_with_other_servers_while_a_turn_runs_is_refused(
        sim: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loads = _count_loads(monkeypatch)

    async def main() -> tuple[BaseException | None, bool]:
        gate, asked = asyncio.Event(), asyncio.Event()
        _GATE.update(gate=gate, asked=asked)
        client = AsyncCursorAgentClient(sim(transport="acp", permission_mode="allow",
                                            workspace=str(tmp_path)), tools=[held_lookup])
        try:
            gate.set()
            first = await client.query('held_lookup {"order_id": "A1"}')
            gate.clear()
            asked.clear()
            running = asyncio.create_task(client.query('held_lookup {"order_id": "A2"}',
                                                       resume=first.session_id))
            await asyncio.wait_for(asked.wait(), 60)  # its tool call waits for us
            second = await client.query("hello", resume=first.session_id,
                                        mcp_servers={"other": {"command": "true", "args": []}})
            refused = second.exception  # (query answers a failed result, not a raise)
            gate.set()
            return refused, (await asyncio.wait_for(running, 60)).success
        finally:
            gate.set()
            await client.aclose()

    refused, first_ok = asyncio.run(main())
    assert isinstance(refused, SessionError) and "running a turn already" in str(refused)
    assert first_ok and loads == []


@pytest.mark.parametrize(("first", "second"), [
    ({"db": {"command": "true", "args": [], "env": {"DB": "prod"}}},
     {"db": {"command": "true", "args": [], "env": {"DB": "staging"}}}),
    ({"search": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Tenant": "a"}}},
     {"search": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Tenant": "b"}}}),
], ids=["stdio-env", "http-header"])
def test_a_server_changed_as_written_is_given_to_the_agent(
        sim: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        first: dict[str, Any], second: dict[str, Any]) -> None:
    """Review 55: only addresses were compared, so a chat that switched its server from DB=prod
    to DB=staging kept the server the agent had started with DB=prod."""
    loads = _count_loads(monkeypatch)

    async def main() -> None:
        client = AsyncCursorAgentClient(sim(transport="acp", permission_mode="allow",
                                            workspace=str(tmp_path)))
        try:
            r = await client.query("hello", mcp_servers=first)
            assert r.success, r.error
            r = await client.query("hello", resume=r.session_id, mcp_servers=second)
            assert r.success, r.error
        finally:
            await client.aclose()

    asyncio.run(main())
    assert loads == [False]
