"""The simulator as the CLI's MCP client: approval gate, interpolation, real-shaped lines."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import orjson

from cursor_agent_api.protocol import Transcript
from cursor_agent_api.sim import wire
from cursor_agent_api.sim.mcp_config import approval_key, workspace_slug
from cursor_agent_api.testing import sim_binary
from cursor_agent_api.tools.server import ToolServer

from .conftest import TOOLS

FRAGMENT = next((Path(__file__).parents[1] / "data" / "cursor-real" / "fragments").glob("*.ndjson"))
PROMPT = 'Use lookup_order {"order_id": "Z7"}'


def _run_sim(workspace: Path, config_dir: Path, env: dict[str, str], *flags: str) -> Transcript:
    out = subprocess.run([sim_binary(), "-p", "--output-format", "stream-json", "--trust", "--force",
                          f"--workspace={workspace}", *flags, PROMPT],
                         capture_output=True, timeout=120,
                         env={"PATH": "/usr/bin:/bin", "CURSOR_CONFIG_DIR": str(config_dir), **env})
    assert out.returncode == 0, out.stderr
    return Transcript.from_lines(out.stdout.splitlines())


def _with_server(check: Any) -> Any:
    async def main() -> Any:
        server = ToolServer(TOOLS)
        await server.start()
        try:
            return await asyncio.to_thread(check, server)
        finally:
            await server.stop()

    return asyncio.run(main())


def test_a_server_loads_only_when_approved(tmp_path: Path) -> None:
    ws, config_dir = tmp_path / "ws", tmp_path / "config"
    (ws / ".cursor").mkdir(parents=True)
    config_dir.mkdir()

    def check(server: ToolServer) -> list[Transcript]:
        entry = {"url": server.url, "headers": {"Authorization": "Bearer ${env:APP_TOKEN}"}}
        (config_dir / "mcp.json").write_text(json.dumps({"mcpServers": {"app": entry}}))
        env = {"APP_TOKEN": server.token}
        runs = [_run_sim(ws, config_dir, env)]                      # not approved: not loaded
        runs.append(_run_sim(ws, config_dir, env, "--approve-mcps"))  # approved by the flag
        approvals = config_dir / "projects" / workspace_slug(str(ws.resolve())) / "mcp-approvals.json"
        approvals.parent.mkdir(parents=True)
        approvals.write_text(json.dumps([approval_key("app", entry, str(ws.resolve()))]))
        runs.append(_run_sim(ws, config_dir, env))                  # approved by the record
        runs.append(_run_sim(ws, config_dir, {"APP_TOKEN": "wrong"}))  # 401: not loaded
        return runs

    unapproved, flagged, recorded, refused = _with_server(check)
    assert not unapproved.tool_calls and not refused.tool_calls
    for t in (flagged, recorded):
        schema, call = t.tool_calls
        assert (schema.kind.value, schema.mcp_server) == ("mcp_tools", "app")
        assert (call.mcp_server, call.mcp_tool, call.args["args"]) == ("app", "lookup_order",
                                                                       {"order_id": "Z7"})
        assert call.mcp_output == '{"id": "Z7", "status": "shipped", "items": 3}'


def test_the_project_file_wins_and_the_lines_have_the_real_shape(tmp_path: Path) -> None:
    ws, config_dir = tmp_path / "ws", tmp_path / "config"
    (ws / ".cursor").mkdir(parents=True)
    config_dir.mkdir()
    (config_dir / "mcp.json").write_text(json.dumps({"mcpServers": {"app": {"url": "http://127.0.0.1:9/x"}}}))

    def check(server: ToolServer) -> bytes:
        entry = {"url": server.url, "headers": {"Authorization": f"Bearer {server.token}"}}
        (ws / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"app": entry}}))
        out = subprocess.run([sim_binary(), "-p", "--output-format", "stream-json", "--trust",
                              "--force", "--approve-mcps", f"--workspace={ws}", PROMPT],
                             capture_output=True, timeout=120,
                             env={"PATH": "/usr/bin:/bin", "CURSOR_CONFIG_DIR": str(config_dir)})
        return out.stdout

    stdout = _with_server(check)
    lines = [orjson.loads(x) for x in stdout.splitlines()]
    calls = [x for x in lines if x.get("type") == "tool_call"]
    started = next(x for x in calls if x["subtype"] == "started" and "mcpToolCall" in x["tool_call"])
    completed = next(x for x in calls if x["subtype"] == "completed" and "mcpToolCall" in x["tool_call"])
    lookup = next(x for x in calls if x["subtype"] == "started" and "getMcpToolsToolCall" in x["tool_call"])
    real_lookup = next(orjson.loads(x) for x in FRAGMENT.read_bytes().splitlines()
                       if b"getMcpToolsToolCall" in x)
    assert list(lookup["tool_call"]["getMcpToolsToolCall"]["args"]) == \
        list(real_lookup["tool_call"]["getMcpToolsToolCall"]["args"])
    real = next(orjson.loads(x) for x in FRAGMENT.read_bytes().splitlines() if b"mcpToolCall" in x)

    def shape(value: Any) -> Any:  # the keys, in order, all the way down
        if isinstance(value, dict):
            return [(k, shape(v)) for k, v in value.items()]
        return type(value).__name__

    real_args = real["tool_call"]["mcpToolCall"]["args"]
    assert shape(started) == shape({**real, "tool_call": {**real["tool_call"], "mcpToolCall": {
        **real["tool_call"]["mcpToolCall"], "args": {**real_args, "args": {"order_id": "Z7"}}}}})
    # byte for byte: the real line rebuilt by the builders the simulator writes through
    rebuilt = wire.encode(wire.tool_call_started(
        real["session_id"], real["call_id"], "mcpToolCall",
        wire.mcp_args("faz-ai", "get_board", {}, real["call_id"]),
        model_call_id=real["model_call_id"], started_at_ms=int(real["tool_call"]["startedAtMs"]),
        timestamp_ms=real["timestamp_ms"], description=real["tool_call"]["mcpToolCall"]["description"]))
    assert rebuilt == next(x for x in FRAGMENT.read_bytes().splitlines(keepends=True) if b"mcpToolCall" in x)
    result = completed["tool_call"]["mcpToolCall"]["result"]
    text = '{"id": "Z7", "status": "shipped", "items": 3}'
    assert result == {"success": {"content": [{"text": {"text": text}}], "isError": False,
                                  "systemReminders": []}}
