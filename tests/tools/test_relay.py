"""The stdio relay forwards MCP to the host over the Unix socket, and exits when the agent
closes its stdin (it used to stay, orphaned, once the agent was gone)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import Allow, CursorAgentClient
from cursor_agent_api.tools import tool
from cursor_agent_api.tools.relay import DROP_CWD_ARGS, SAFE_PATH_ARGS
from cursor_agent_api.tools.server import ToolServer

from .conftest import PROMPT, TOOLS

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "Cursor", "version": "1.0.0"}}}


@pytest.mark.parametrize("start", [SAFE_PATH_ARGS, DROP_CWD_ARGS], ids=["3.11+", "3.10"])
def test_relay_answers_then_exits_at_end_of_input(start: list[str], tmp_path: Path) -> None:
    # started in a directory with a module the relay imports: it is not imported from there
    marker = tmp_path / "repo-code-ran"
    (tmp_path / "anyio.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise SystemExit(0)\n")

    async def main() -> tuple[bytes, int | None]:
        path = os.path.join(tempfile.mkdtemp(), "mcp.sock")
        server = ToolServer(TOOLS)
        await server.start(path)
        assert oct(os.stat(path).st_mode & 0o777) == "0o600"
        relay = await asyncio.create_subprocess_exec(
            sys.executable, *start, path, "TOOLS_TOKEN", cwd=tmp_path,
            env={**os.environ, "TOOLS_TOKEN": server.token},
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        try:
            assert relay.stdin is not None and relay.stdout is not None
            relay.stdin.write(json.dumps(INIT).encode() + b"\n")
            await relay.stdin.drain()
            answer = await asyncio.wait_for(relay.stdout.readline(), 60)
            relay.stdin.close()
            await asyncio.wait_for(relay.wait(), 60)  # a bound, not a timing
            return answer, relay.returncode
        finally:
            if relay.returncode is None:
                relay.kill()
                await relay.wait()
            await server.stop()

    answer, code = asyncio.run(main())
    assert json.loads(answer)["result"]["serverInfo"]["name"] == "python-tools"
    assert code == 0 and not marker.exists()


@pytest.mark.parametrize("transport", ["print", "acp"])
def test_the_relay_imports_nothing_from_the_workspace(sim: Callable[..., Any], cursor_sim_workspace: Path,
                                                      monkeypatch: pytest.MonkeyPatch, transport: str,
                                                      tmp_path: Path) -> None:
    """The agent starts stdio servers in its own cwd (the workspace, MCP.md §2); a repository's
    top-level ``anyio.py`` must not run in the relay (``python -m`` puts the cwd first on sys.path)."""
    monkeypatch.setenv("CURSOR_AGENT_API_TOOLS_TRANSPORT", "relay")
    monkeypatch.chdir(cursor_sim_workspace)  # the user's program runs from the project, as usual
    marker = tmp_path / "repo-code-ran"
    poison = f"open({str(marker)!r}, 'w').close()\nraise SystemExit(0)\n"
    for module in ("anyio.py", "httpx2.py"):
        (cursor_sim_workspace / module).write_text(poison)
    extra = {"can_use_tool": lambda request: Allow()} if transport == "acp" else {}  # ACP asks
    with CursorAgentClient(sim(transport=transport, **extra), tools=TOOLS) as client:
        result = client.query(PROMPT)
    assert not marker.exists()
    assert result.success, result.error
    assert '`lookup_order` returned: {"id": "A1", "status": "shipped", "items": 3}' in result.result


def test_another_clients_agent_cannot_call_the_tools(sim: Callable[..., Any], cursor_sim_workspace: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Two clients in one workspace: while B's turn runs, A's agent sees B's entry in the shared
    ``.cursor/mcp.json`` (and B's tools in the allowlist). In relay mode it must still not reach
    B's server: the relay needs B's token, which only B's agent's environment holds."""
    import threading

    monkeypatch.setenv("CURSOR_AGENT_API_TOOLS_TRANSPORT", "relay")
    entered, release = threading.Event(), threading.Event()
    called_with: list[str] = []

    @tool
    def wait_here() -> str:
        """B's slow tool (keeps B's turn open)."""
        entered.set()
        release.wait(120)
        return "done"

    @tool
    def transfer_funds(to: str) -> str:
        """B's privileged tool."""
        called_with.append(to)
        return f"sent to {to}"

    @tool
    def hello() -> str:
        """A's only tool."""
        return "hi"

    b_result: list[Any] = []
    with CursorAgentClient(sim(), tools=[wait_here, transfer_funds]) as b, \
            CursorAgentClient(sim(), tools=[hello]) as a:
        thread = threading.Thread(target=lambda: b_result.append(b.query("Use wait_here")))
        thread.start()
        try:
            assert entered.wait(120)  # a bound, not a timing: B's turn is inside its tool
            a_result = a.query('Use transfer_funds {"to": "mallory"}')
        finally:
            release.set()
            thread.join(120)
    assert called_with == []
    assert "sent to mallory" not in (a_result.result or "")
    (b_turn,) = b_result
    assert b_turn.success and "`wait_here` returned: done" in b_turn.result


def test_the_unix_socket_wants_the_token_and_the_relay_its_variable(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import httpx

    from cursor_agent_api.tools.relay import main
    from cursor_agent_api.tools.server import RELAY_AUTHORITY

    async def statuses() -> list[int]:
        path = os.path.join(tempfile.mkdtemp(), "mcp.sock")
        server = ToolServer(TOOLS)
        await server.start(path)
        try:
            async with httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=path)) as http:
                url = f"http://{RELAY_AUTHORITY}/mcp"
                bare = await http.post(url, json=INIT)
                wrong = await http.post(url, json=INIT, headers={"Authorization": "Bearer nope"})
            return [bare.status_code, wrong.status_code]
        finally:
            await server.stop()

    assert asyncio.run(statuses()) == [401, 401]
    monkeypatch.delenv("TOOLS_TOKEN_UNSET", raising=False)
    assert main(["/nonexistent/mcp.sock", "TOOLS_TOKEN_UNSET"]) == 2
    assert "$TOOLS_TOKEN_UNSET is not set" in capsys.readouterr().err
