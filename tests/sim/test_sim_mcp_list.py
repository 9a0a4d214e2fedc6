"""``mcp list`` (MCP.md §1 [obs:TH]): with no server configured it prints
``No MCP servers configured (expected in .cursor/mcp.json or ~/.cursor/mcp.json)`` and exits 0,
even when not logged in; with servers, one line each (the simulator's own format)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from cursor_agent_api.sim.mcp_config import approval_key, workspace_slug

from .conftest import SIM, TIMEOUT, Sim

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


def _bare_env(home: Path, **extra: str) -> dict[str, str]:
    """No ``CURSOR_*`` variable, ``HOME`` a fresh directory: the simulator's defaults, nothing
    real read or written."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURSOR_") and k != "XDG_DATA_HOME"}
    return {**env, "HOME": str(home), **extra}


def _approve(root: Path, ws: Path, name: str, entry: dict[str, Any]) -> None:
    path = root / "projects" / workspace_slug(str(ws.resolve())) / "mcp-approvals.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps([approval_key(name, entry, str(ws.resolve()))]))


def _mcp_list(ws: Path, env: dict[str, str]) -> list[str]:
    run = subprocess.run([SIM, "mcp", "list"], cwd=ws, env=env, capture_output=True, timeout=TIMEOUT,
                         check=True)
    return run.stdout.decode().splitlines()


def test_approvals_are_read_from_home_cursor_without_a_config_dir(ws: Path, tmp_path: Path) -> None:
    """Where the CLI reads them (MCP.md §4) and the client writes them: ``~/.cursor/projects``,
    not the simulator's own data directory."""
    entry = {"url": "http://127.0.0.1:9/mcp"}
    (ws / ".cursor").mkdir()
    (ws / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"orders": entry}}))
    home = tmp_path / "home"
    home.mkdir()
    assert _mcp_list(ws, _bare_env(home)) == ["orders: not loaded (needs approval)"]
    _approve(home / ".cursor", ws, "orders", entry)
    assert _mcp_list(ws, _bare_env(home)) == ["orders: approved"]


def test_cursor_data_dir_moves_the_approvals(ws: Path, tmp_path: Path) -> None:
    entry = {"url": "http://127.0.0.1:9/mcp"}
    (ws / ".cursor").mkdir()
    (ws / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"orders": entry}}))
    _approve(tmp_path / "data", ws, "orders", entry)
    env = _bare_env(tmp_path, CURSOR_CONFIG_DIR=str(tmp_path / "config"),
                    CURSOR_DATA_DIR=str(tmp_path / "data"))
    assert _mcp_list(ws, env) == ["orders: approved"]
