"""``cursor-agent-sim acp`` keeps serving stdin while a turn waits on a shell command or an MCP
call (audit 17, finding 3: it read stdin only between steps, so ``session/new`` or
``session/cancel`` sent while ``sleep 5`` ran was answered when the command ended, and a tool
that asked the same client for a new session waited until its own timeout). ACP.md §8: a cancel
is answered in ms; the stream stops; the session stays usable."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from cursor_agent_api.sim.workspace import SHELL_TIMEOUT_MS

from .acp_peer import WAIT, Peer, allow_once
from .conftest import Sim, running

COMMAND = "sleep 120 & echo $! > sleep.pid; wait"
"""Runs until killed (or stopped by the simulator's 30 s bound), its ``sleep`` a grandchild."""

HOLD_SERVER = Path(__file__).with_name("mcp_hold_server.py")


def _appears(path: Path) -> str:
    """``path``'s text once it exists and is not empty (polled, generously bounded)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} did not appear within {WAIT} s")


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + WAIT
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not running(pid)


def _prompt(peer: Peer, session_id: str, text: str) -> int:
    prompt = [{"type": "text", "text": text}]
    return peer.request("session/prompt", {"sessionId": session_id, "prompt": prompt})


def test_requests_and_a_cancel_are_answered_while_a_command_runs(sim: Sim, ws: Path) -> None:
    peer = Peer.start(sim)
    peer.handlers["session/request_permission"] = allow_once  # the simulator's own request
    try:
        peer.init()
        sid = peer.new_session(ws)
        turn = _prompt(peer, sid, f"run `{COMMAND}`")
        ask = peer.until(turn, stop_on="session/request_permission")
        peer.answer(ask, allow_once(ask))  # an answer to the simulator's own request still counts
        pid = int(_appears(ws / "sleep.pid"))
        other = peer.call("session/new", {"cwd": str(ws), "mcpServers": []})
        assert "sessionId" in other["result"], other
        assert running(pid), "session/new was answered only once the command had ended"
        assert "models" in peer.call("cursor/list_available_models", {})["result"]
        assert running(pid)

        peer.notify("session/cancel", {"sessionId": sid})
        sent = time.monotonic()
        assert peer.until(turn)["result"] == {"stopReason": "cancelled"}
        # well before the command's own bound (the old answer came when it was stopped at 30 s)
        assert time.monotonic() - sent < SHELL_TIMEOUT_MS / 1000 / 2
        assert _gone(pid), "the cancelled command's sleep still runs"
        # the stream stopped: the running call got no final update
        shell = [u for u in peer.updates(sid) if u.get("rawInput", {}).get("command") == COMMAND]
        assert shell, peer.updates(sid)
        call_id = shell[0]["toolCallId"]
        assert [u.get("status") for u in peer.updates(sid)
                if u.get("toolCallId") == call_id and u.get("status")][-1] == "in_progress"
        # the session stays usable
        assert peer.prompt(sid, "say hi")["result"] == {"stopReason": "end_turn"}
    finally:
        peer.close()


def test_requests_and_a_cancel_are_answered_while_an_mcp_call_runs(sim: Sim, ws: Path) -> None:
    shutil.copy(HOLD_SERVER, ws / "hold_server.py")
    given = [{"name": "hold", "command": sys.executable, "args": [str(ws / "hold_server.py")], "env": []}]
    peer = Peer.start(sim, "--force", env={"CURSOR_AGENT_SIM_ACP_MCP": "connect"})
    peer.handlers["session/request_permission"] = allow_once
    try:
        peer.init()
        sid = peer.call("session/new", {"cwd": str(ws), "mcpServers": given})["result"]["sessionId"]
        turn = _prompt(peer, sid, "hold {}")
        _appears(ws / "held")  # the server holds the call now
        other = peer.call("session/new", {"cwd": str(ws), "mcpServers": []})
        assert "sessionId" in other["result"], other
        peer.notify("session/cancel", {"sessionId": sid})
        assert peer.until(turn)["result"] == {"stopReason": "cancelled"}
        # the connection survives the abandoned call: the next call of the session is answered
        (ws / "release").write_text("")
        assert peer.prompt(sid, "where_am_i {}")["result"] == {"stopReason": "end_turn"}
        done = [u for u in peer.updates(sid) if u.get("status") == "completed" and "rawOutput" in u]
        assert done[-1]["rawOutput"] == {"success": True}, peer.updates(sid)
    finally:
        (ws / "release").write_text("")
        peer.close()

