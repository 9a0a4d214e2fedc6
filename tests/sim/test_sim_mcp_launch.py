"""MCP servers started as the CLI starts them (MCP.md §2; audit 11, finding 4): a stdio server
runs in the agent's workspace (print mode: ``--workspace``, else the cwd; ACP: the session's
``cwd``), a local entry's ``envFile`` is read, and a remote entry is tried as streamable HTTP,
then as SSE. Before, the server ran in the simulator's own cwd (a server named by a path
relative to the project did not load), ``envFile`` was ignored, and an SSE-only server was
silently not loaded."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api.protocol import ToolStatus, Transcript

from .acp_peer import Peer, allow_once, text_of
from .conftest import Sim

SERVER = Path(__file__).with_name("mcp_where_server.py")
SSE_SERVER = Path(__file__).with_name("mcp_sse_server.py")
SLOW = {"CURSOR_AGENT_SIM_MCP_TIMEOUT": "60"}  # generous: loading is checked, not timed


def _mcp_json(ws: Path, servers: dict[str, Any]) -> None:
    (ws / ".cursor").mkdir(exist_ok=True)
    (ws / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": servers}))


def _mcp_output(t: Transcript) -> str:
    calls = [c for c in t.tool_calls if c.kind.value == "mcp"]
    assert calls, t.result_text
    (call,) = calls
    assert call.status is ToolStatus.SUCCEEDED, call
    return call.mcp_output or ""


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    path = tmp_path / "elsewhere"
    path.mkdir()
    return path


@pytest.mark.parametrize("relative", [False, True])
def test_print_mode_runs_a_stdio_server_in_the_workspace(
        ws: Path, elsewhere: Path, tmp_path: Path, relative: bool) -> None:
    shutil.copy(SERVER, ws / "where_server.py")
    script = "where_server.py" if relative else str(ws / "where_server.py")
    _mcp_json(ws, {"where": {"command": sys.executable, "args": [script]}})
    sim = Sim(elsewhere, tmp_path / "config")  # started from elsewhere, as a client library does
    try:
        run = sim.stream("--force", "--approve-mcps", f"--workspace={ws}", "where_am_i {}", env=SLOW)
    finally:
        sim.close()
    assert run.returncode == 0, run.err
    assert f"CWD={ws.resolve()} " in _mcp_output(run.transcript)


def test_acp_runs_a_given_stdio_server_in_the_sessions_cwd(sim: Sim, ws: Path, elsewhere: Path) -> None:
    # the process runs in ``ws``; the session's cwd is another directory
    shutil.copy(SERVER, elsewhere / "where_server.py")
    given = [{"name": "where", "command": sys.executable, "args": ["where_server.py"], "env": []}]
    peer = Peer.start(sim, "--force", env={"CURSOR_AGENT_SIM_ACP_MCP": "connect", **SLOW})
    peer.handlers["session/request_permission"] = allow_once
    try:
        peer.init()
        sid = peer.call("session/new", {"cwd": str(elsewhere), "mcpServers": given})["result"]["sessionId"]
        peer.prompt(sid, "where_am_i {}")
        text = text_of(peer.updates(sid))
    finally:
        peer.close()
    assert f"CWD={elsewhere.resolve()} SECRET" in text


def test_env_file_is_read_and_env_wins(sim: Sim, ws: Path) -> None:
    shutil.copy(SERVER, ws / "where_server.py")
    (ws / "server.env").write_text("# a comment\n\nexport OTHER=1\nSIMFIX_SECRET='from-file'\n")
    entry = {"command": sys.executable, "args": ["where_server.py"], "envFile": "server.env"}
    _mcp_json(ws, {"where": entry})
    env = {k: v for k, v in SLOW.items()}
    run = sim.stream("--force", "--approve-mcps", "where_am_i {}", env=env)
    assert "SECRET=from-file" in _mcp_output(run.transcript)
    _mcp_json(ws, {"where": {**entry, "env": {"SIMFIX_SECRET": "from-env"}}})
    run = sim.stream("--force", "--approve-mcps", "where_am_i {}", env=env)
    assert "SECRET=from-env" in _mcp_output(run.transcript)


@pytest.fixture
def sse_url() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, str(SSE_SERVER)], stdout=subprocess.PIPE,
                            start_new_session=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}/sse"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)


def test_an_sse_only_server_loads(sim: Sim, ws: Path, sse_url: str) -> None:
    _mcp_json(ws, {"ssedemo": {"url": sse_url}})
    run = sim.stream("--force", "--approve-mcps", "sse_ping {}", env=SLOW)
    assert run.returncode == 0, run.err
    assert _mcp_output(run.transcript) == "pong-over-sse"
