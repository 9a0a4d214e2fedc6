"""The client's tool host: what a turn is given, and the warning for a CLI that sends no token."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import httpx
import pytest

from cursor_agent_api.config import AgentConfig
from cursor_agent_api.tools.host import ToolHost, prepare_turn

from .conftest import TOOLS


def test_a_turn_gets_the_token_in_its_environment_only(tmp_path: Path) -> None:
    host = ToolHost(TOOLS)
    config, scope = prepare_turn(host, AgentConfig(workspace=str(tmp_path)))
    assert config.env[host.env_var] == host.server.token and not config.approve_mcps
    assert scope.allow == [f"Mcp({host.name}:lookup_order)", f"Mcp({host.name}:track_parcel)"]

    async def main() -> str:
        await scope.enter()
        try:
            return (tmp_path / ".cursor" / "mcp.json").read_text()
        finally:
            scope.exit()
            await host.aclose()

    written = asyncio.run(main())
    assert host.server.token not in written
    assert f'"Authorization": "Bearer ${{env:{host.env_var}}}"' in written
    assert not (tmp_path / ".cursor").exists()


def test_warns_when_the_agent_comes_without_the_token(tmp_path: Path, caplog: pytest.LogCaptureFixture
                                                      ) -> None:
    host = ToolHost(TOOLS)
    _, scope = prepare_turn(host, AgentConfig(workspace=str(tmp_path)))

    async def main() -> None:
        await scope.enter()
        async with httpx.AsyncClient(trust_env=False) as http:
            assert (await http.post(host.server.url, json={})).status_code == 401
        scope.exit()
        await host.aclose()

    with caplog.at_level(logging.WARNING, logger="cursor_agent_api.tools"):
        asyncio.run(main())
    assert "seems not to expand ${env:...} in mcp.json headers" in caplog.text
    assert "CURSOR_AGENT_API_TOOLS_TRANSPORT=relay" in caplog.text


def test_the_last_turn_ending_off_the_loop_after_a_close_stops_the_server(tmp_path: Path) -> None:
    """aclose() while a turn runs leaves the server to the last turn out; when that turn's
    scope is left from another thread (a sync consumer), the stop is scheduled on the
    server's loop (a task cannot be made from another thread)."""
    host = ToolHost(TOOLS)
    _, scope = prepare_turn(host, AgentConfig(workspace=str(tmp_path)))

    async def main() -> bool:
        await scope.enter()
        await host.aclose()  # a turn is in progress: not stopped yet
        assert host.server.url and host.active == 1
        await asyncio.to_thread(scope.exit)  # the turn ends on another thread
        for _ in range(200):  # the stop runs on this loop, soon
            await asyncio.sleep(0.05)
            if host.server._server is None or host.server._server.should_exit:
                return True
        return False

    assert asyncio.run(main(), debug=True)  # debug: asyncio refuses calls from other threads


def test_the_relay_socket_under_a_long_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A TMPDIR too long for a socket's path (macOS's /var/folders/…, a CI's): the relay's
    socket goes to a private directory in /tmp instead of failing to bind."""
    long_dir = tmp_path / ("t" * 60) / ("u" * 60)
    long_dir.mkdir(parents=True)
    monkeypatch.setattr("tempfile.tempdir", str(long_dir))
    host = ToolHost(TOOLS, transport="relay")

    async def main() -> str:
        await host.start()
        try:
            assert host._socket_dir is not None
            path = host._socket_dir.path
            sock = Path(path) / "mcp.sock"
            assert sock.is_socket() and (Path(path).stat().st_mode & 0o777) == 0o700
            return str(sock)
        finally:
            await host.aclose()

    sock = asyncio.run(main())
    assert len(sock.encode()) <= 103 and not Path(sock).parent.exists()
