"""What an MCP call reports over ACP (ACP.md §7, MCP tool row): ``completed`` with ``rawOutput
{success: true}``, or ``{error: "MCP error -32601: Method not found"}`` when the server answers
with a JSON-RPC error; and the project's client maps that failed call to an error, as in print
mode (audit 11, finding 3: the simulator sent ``{content, isError}`` on success and no
``rawOutput`` at all on an error, so a failed call looked successful)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import AgentConfig, CursorAgentClient
from cursor_agent_api.sim.mcp_config import approval_key, workspace_slug

from .acp_peer import Peer, allow_once
from .conftest import SIM, Sim

SERVER = Path(__file__).with_name("mcp_where_server.py")


def _entry(ws: Path) -> dict[str, Any]:
    shutil.copy(SERVER, ws / "where_server.py")
    return {"command": sys.executable, "args": [str(ws / "where_server.py")]}


def _acp_completion(sim: Sim, ws: Path, prompt: str) -> dict[str, Any]:
    given = [{"name": "where", **_entry(ws), "env": []}]
    peer = Peer.start(sim, "--force", env={"CURSOR_AGENT_SIM_ACP_MCP": "connect"})
    peer.handlers["session/request_permission"] = allow_once
    try:
        peer.init()
        reply = peer.call("session/new", {"cwd": str(ws), "mcpServers": given})
        sid = reply["result"]["sessionId"]
        peer.prompt(sid, prompt)
        mcp_ids = {u["toolCallId"] for u in peer.updates(sid)
                   if u["sessionUpdate"] == "tool_call" and u.get("title", "").startswith("MCP:")}
        assert len(mcp_ids) == 1, peer.updates(sid)
        done = [u for u in peer.updates(sid) if u.get("toolCallId") in mcp_ids and u.get("status")]
        return done[-1]
    finally:
        peer.close()


@pytest.mark.parametrize(("prompt", "raw"), [
    ("where_am_i {}", {"success": True}),
    ("boom {}", {"error": "MCP error -32601: Method not found"}),
])
def test_acp_raw_output_of_an_mcp_call(sim: Sim, ws: Path, prompt: str, raw: dict[str, Any]) -> None:
    final = _acp_completion(sim, ws, prompt)
    assert final["status"] == "completed"  # even on an error, as the builds do
    assert final["rawOutput"] == raw


def test_print_mode_error_outcome_carries_the_code(sim: Sim, ws: Path) -> None:
    (ws / ".cursor").mkdir()
    (ws / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"where": _entry(ws)}}))
    run = sim.stream("--force", "--approve-mcps", "boom {}")
    lines = [json.loads(x) for x in run.stdout.splitlines()]
    done = next(x for x in lines
                if x.get("subtype") == "completed" and "mcpToolCall" in x.get("tool_call", {}))
    error = {"error": "MCP error -32601: Method not found"}
    assert done["tool_call"]["mcpToolCall"]["result"] == {"error": error}


def test_the_client_reports_a_failed_mcp_call_as_an_error_in_both_transports(
        ws: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "cfgdir"
    entry = _entry(ws)
    (ws / ".cursor").mkdir()
    (ws / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"where": entry}}))
    approvals = cfg / "projects" / workspace_slug(str(ws.resolve())) / "mcp-approvals.json"
    approvals.parent.mkdir(parents=True)
    approvals.write_text(json.dumps([approval_key("where", entry, str(ws.resolve()))]))
    seen = {}
    for transport in ("acp", "print"):
        config = AgentConfig(agent_binary=SIM, transport=transport, trust=True, force_approve=True,
                             workspace=str(ws), env={"CURSOR_CONFIG_DIR": str(cfg)})
        with CursorAgentClient(config) as client:
            failed = client.query("boom {}")
            worked = client.query("where_am_i {}")
        seen[transport] = [(c.kind.value, c.status.value) for r in (failed, worked) for c in r.tool_calls
                           if c.kind.value == "mcp"]
    assert seen["acp"] == seen["print"] == [("mcp", "error"), ("mcp", "succeeded")]
