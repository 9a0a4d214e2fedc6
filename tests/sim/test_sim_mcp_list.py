"""``mcp list`` (MCP.md §1 [obs:TH]): with no server configured it prints
``No MCP servers configured (expected in .cursor/mcp.json or ~/.cursor/mcp.json)`` and exits 0,
even when not logged in; with servers, one line each (the simulator's own format)."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Sim

NONE = "No MCP servers configured (expected in .cursor/mcp.json or ~/.cursor/mcp.json)"


def test_no_servers(sim: Sim) -> None:
    run = sim.run("mcp", "list")
    assert run.returncode == 0 and run.stdout.decode() == NONE + "\n" and run.err == ""
    assert sim.run("logout").returncode == 0
    logged_out = sim.run("mcp", "list", env={"CURSOR_AGENT_SIM_FAULT": "auth"})
    assert logged_out.returncode == 0 and logged_out.stdout.decode() == NONE + "\n"


def test_configured_servers_are_listed(sim: Sim, ws: Path) -> None:
    (ws / ".cursor").mkdir()
    (ws / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {
        "orders": {"command": "python", "args": ["-m", "orders"]},
        "shared": {"url": "http://127.0.0.1:9/mcp"},
    }}))
    sim.config_dir.mkdir(parents=True, exist_ok=True)
    (sim.config_dir / "mcp.json").write_text(json.dumps({"mcpServers": {
        "shared": {"command": "overridden-by-the-project"},
        "docs": {"url": "http://127.0.0.1:9/docs"},
    }}))
    run = sim.run("mcp", "list")
    assert run.returncode == 0, run.err
    assert run.stdout.decode().splitlines() == [
        "docs: not loaded (needs approval)",
        "orders: not loaded (needs approval)",
        "shared: not loaded (needs approval)",
    ]
    approved = sim.run("--approve-mcps", "mcp", "list")
    assert approved.stdout.decode().splitlines() == ["docs: approved", "orders: approved", "shared: approved"]
    elsewhere = sim.run("--workspace", str(sim.config_dir), "mcp", "list")  # only the user's file
    assert elsewhere.stdout.decode().splitlines() == [
        "docs: not loaded (needs approval)",
        "shared: not loaded (needs approval)",
    ]


def test_other_mcp_subcommands_are_not_simulated(sim: Sim) -> None:
    for args in (("mcp",), ("mcp", "enable", "x")):
        run = sim.run(*args)
        assert run.returncode == 1 and "not simulated" in run.err
