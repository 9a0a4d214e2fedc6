"""The simulator loading MCP servers like the CLI: a silent stdio server is not loaded (and not
left running), and ACP loads only approved servers (MCP.md §1, §4, §7, §8)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api.sim.acp import mcp_entries
from cursor_agent_api.sim.mcp_config import approval_key, workspace_slug

from .acp_peer import Peer
from .conftest import Sim, running

FAST = {"CURSOR_AGENT_SIM_MCP_TIMEOUT": "0.5"}


@pytest.fixture
def pidfile(tmp_path: Path) -> Iterator[Path]:
    """Where a silent stdio server writes its pid; whatever is left there is killed afterwards."""
    path = tmp_path / "server.pids"
    yield path
    for pid in (int(p) for p in path.read_text().split()) if path.exists() else ():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _silent(pidfile: Path) -> dict[str, Any]:
    """A stdio server that starts and never answers ``initialize``."""
    return {"command": "sh", "args": ["-c", f"echo $$ >> {pidfile}; exec sleep 600"]}


def _recorder(marker: Path, tag: str) -> dict[str, Any]:
    """A stdio "server" that only notes it was started (loading was attempted), then exits."""
    return {"command": "sh", "args": ["-c", f"echo {tag} >> {marker}"]}


def _started(marker: Path) -> list[str]:
    tags = marker.read_text().split() if marker.exists() else []
    marker.unlink(missing_ok=True)
    return sorted(tags)


def _approve(root: Path, ws: Path, *keys: str) -> None:
    path = root / "projects" / workspace_slug(str(ws.resolve())) / "mcp-approvals.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(list(keys)))


def test_a_stdio_server_that_never_answers_is_not_loaded_and_not_left_running(
        sim: Sim, ws: Path, pidfile: Path) -> None:
    (ws / ".cursor").mkdir()
    (ws / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"stuck": _silent(pidfile)}}))
    run = sim.stream("--approve-mcps", "--force", "say hi", env=FAST)
    assert run.returncode == 0, run.err
    assert run.transcript.success
    pids = [int(p) for p in pidfile.read_text().split()]
    assert pids and not any(running(p) for p in pids)


def test_acp_session_new_is_answered_when_a_given_server_never_answers(
        sim: Sim, ws: Path, pidfile: Path) -> None:
    given = [{"name": "stuck", **_silent(pidfile), "env": []}]
    (entry,) = mcp_entries(given).values()
    _approve(sim.config_dir, ws, approval_key("stuck", entry, str(ws.resolve())))
    peer = Peer.start(sim, env=FAST)
    peer.init()
    reply = peer.call("session/new", {"cwd": str(ws), "mcpServers": given})
    assert "sessionId" in reply["result"]
    assert peer.call("session/new", {"cwd": str(ws), "mcpServers": []})["result"]["sessionId"]
    pids = [int(p) for p in pidfile.read_text().split()]
    assert pids and not any(running(p) for p in pids)
    peer.close()


def test_acp_ignores_approve_mcps_and_loads_a_file_server_only_when_recorded(
        sim: Sim, ws: Path, tmp_path: Path) -> None:
    marker = tmp_path / "started.log"
    entry = _recorder(marker, "project")
    (ws / ".cursor").mkdir()
    (ws / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"proj": entry}}))
    for flags in ((), ("--approve-mcps",)):
        peer = Peer.start(sim, *flags)
        peer.init()
        peer.new_session(ws)
        peer.close()
        assert _started(marker) == [], flags  # MCP.md §4: --approve-mcps is not wired to ACP
    _approve(sim.config_dir, ws, approval_key("proj", entry, str(ws.resolve())))
    peer = Peer.start(sim)
    peer.init()
    peer.new_session(ws)
    assert _started(marker) == ["project"]
    # read once per process (MCP.md §1): a server added now is not seen by this process
    other = _recorder(marker, "added")
    (ws / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"proj": entry, "added": other}}))
    _approve(sim.config_dir, ws, approval_key("proj", entry, str(ws.resolve())),
             approval_key("added", other, str(ws.resolve())))
    peer.new_session(ws)
    assert _started(marker) == ["project"]
    peer.close()
    peer = Peer.start(sim)  # a new process reads the files again
    peer.init()
    peer.new_session(ws)
    assert _started(marker) == ["added", "project"]
    peer.close()


def test_acp_loads_a_given_server_only_with_an_approval_entry(sim: Sim, ws: Path, tmp_path: Path) -> None:
    marker = tmp_path / "started.log"
    given = [{"name": "given", **_recorder(marker, "given"), "env": []}]
    data_dir = tmp_path / "data"

    def session_new(**env: str) -> list[str]:
        peer = Peer.start(sim, env=env)
        peer.init()
        assert "result" in peer.call("session/new", {"cwd": str(ws), "mcpServers": given})
        peer.close()
        return _started(marker)

    assert session_new() == []                                      # no entry: not loaded
    assert session_new(CURSOR_AGENT_SIM_ACP_MCP="connect") == ["given"]  # 08.11: loaded anyway
    (entry,) = mcp_entries(given).values()
    _approve(data_dir, ws, approval_key("given", entry, str(ws.resolve())))
    assert session_new() == []                                      # the entry is elsewhere
    assert session_new(CURSOR_DATA_DIR=str(data_dir)) == ["given"]  # CURSOR_DATA_DIR honoured


def test_acp_approves_a_given_http_server_by_its_url_alone(sim: Sim, ws: Path) -> None:
    """The forum repro's hash of an ACP http server: ``{url}`` (MCP.md §4). The server is the
    project's own tool server, so "loaded" is seen as its ``tools/list``."""
    import asyncio

    from cursor_agent_api.tools import tool
    from cursor_agent_api.tools.server import ToolServer

    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    async def main() -> list[int]:
        server = ToolServer([ping])
        await server.start()
        try:
            given = [{"name": "app", "type": "http", "url": server.url,
                      "headers": [{"name": "Authorization", "value": f"Bearer {server.token}"}]}]

            def load() -> int:
                before = server.admitted
                peer = Peer.start(sim)
                peer.init()
                assert "result" in peer.call("session/new", {"cwd": str(ws), "mcpServers": given})
                peer.close()
                return server.admitted - before

            unapproved = await asyncio.to_thread(load)
            _approve(sim.config_dir, ws, approval_key("app", {"url": server.url}, str(ws.resolve())))
            return [unapproved, await asyncio.to_thread(load)]
        finally:
            await server.stop()

    unapproved, approved = asyncio.run(main())
    assert unapproved == 0 and approved > 0
