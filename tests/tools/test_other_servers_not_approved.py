"""A client's own tools (or the config's ``mcp_servers``) approve only the turn's own servers:
not the MCP servers a cloned repository declares in ``.cursor/mcp.json`` nor those of the
user's ``~/.cursor/mcp.json`` (a stdio entry there is a command the agent would run). Only an
explicit ``AgentConfig(approve_mcps=True)`` passes ``--approve-mcps`` (approving them all)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import CursorAgentClient
from cursor_agent_api.config import AgentConfig
from cursor_agent_api.protocol import ToolKind, ToolStatus
from cursor_agent_api.runtime.argv import global_flags
from cursor_agent_api.tools.host import ToolHost, prepare_turn

from .conftest import TOOLS

PROMPT = 'Use lookup_order {"order_id": "A1"}'


def _marker_server(marker: Path) -> dict[str, Any]:
    """A stdio "server" that is only a command: it leaves ``marker`` if the agent starts it."""
    return {"command": "/bin/sh", "args": ["-c", f"id > {marker}; exit 1"]}


@pytest.fixture
def hostile(cursor_sim_workspace: Path, cursor_sim_config_dir: Path) -> tuple[Path, Path]:
    """The repository's ``.cursor/mcp.json`` and the user's own (the simulator's config dir is
    its ``~/.cursor``) each declare a server; the markers they would leave."""
    repo_marker, user_marker = cursor_sim_workspace / "REPO-RAN", cursor_sim_config_dir / "USER-RAN"
    (cursor_sim_workspace / ".cursor").mkdir()
    (cursor_sim_workspace / ".cursor" / "mcp.json").write_text(
        json.dumps({"mcpServers": {"repo-helper": _marker_server(repo_marker)}}))
    (cursor_sim_config_dir / "mcp.json").write_text(
        json.dumps({"mcpServers": {"user-helper": _marker_server(user_marker)}}))
    return repo_marker, user_marker


def _own_call_ran(result: Any) -> bool:
    return any(c.kind is ToolKind.MCP and c.mcp_tool == "lookup_order" and c.status is ToolStatus.SUCCEEDED
               for c in result.tool_calls)


def test_own_tools_do_not_approve_the_workspaces_or_the_users_servers(
        sim: Callable[..., AgentConfig], hostile: tuple[Path, Path]) -> None:
    with CursorAgentClient(sim(), tools=TOOLS) as client:
        result = client.query(PROMPT)
    assert result.success, result.error
    assert _own_call_ran(result)  # the tool server loaded through its own approval entry
    repo_marker, user_marker = hostile
    assert not repo_marker.exists(), "the repository's MCP command ran"
    assert not user_marker.exists(), "the user's unapproved MCP command ran"


def test_mcp_servers_do_not_approve_the_workspaces_servers(
        sim: Callable[..., AgentConfig], hostile: tuple[Path, Path], tmp_path: Path) -> None:
    mine = tmp_path / "MINE-RAN"
    with CursorAgentClient(sim(mcp_servers={"mine": _marker_server(mine)})) as client:
        assert client.query("what is 6 * 7").success
    assert mine.exists()  # the config's own server was approved (its entry) and started
    assert not hostile[0].exists() and not hostile[1].exists()


def test_an_explicit_approve_mcps_keeps_approving_every_server(
        sim: Callable[..., AgentConfig], hostile: tuple[Path, Path]) -> None:
    with CursorAgentClient(sim(approve_mcps=True), tools=TOOLS) as client:
        result = client.query(PROMPT)
    assert _own_call_ran(result)
    assert hostile[0].exists() and hostile[1].exists()  # the user said so


@pytest.mark.parametrize("given", [False, True])
def test_the_turn_passes_approve_mcps_only_when_the_user_did(tmp_path: Path, given: bool) -> None:
    config, _ = prepare_turn(ToolHost(TOOLS), AgentConfig(workspace=str(tmp_path), approve_mcps=given))
    assert config.approve_mcps is given
    assert ("--approve-mcps" in global_flags(config)) is given


def test_a_build_that_ignores_the_entries_gets_a_warning_naming_the_fallback(
        sim: Callable[..., AgentConfig], cursor_sim_workspace: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The entries go where the agent does not look (as with a build that does not accept them
    in print mode): the tool server does not load, one warning says why and names
    ``approve_mcps=True``, which then loads it (and, as documented, every other server)."""
    import cursor_agent_api.tools.host as host_module

    monkeypatch.setattr(host_module, "approvals_file",
                        lambda env, ws: tmp_path / "nowhere" / "projects" / "x" / "mcp-approvals.json")
    with caplog.at_level(logging.WARNING, logger="cursor_agent_api.tools"), \
            CursorAgentClient(sim(), tools=TOOLS) as client:
        result = client.query(PROMPT)
    assert result.success, result.error
    assert not _own_call_ran(result)
    (warning,) = [r.getMessage() for r in caplog.records if "never listed" in r.getMessage()]
    assert "nowhere" in warning and "AgentConfig(approve_mcps=True)" in warning
    with CursorAgentClient(sim(approve_mcps=True), tools=TOOLS) as client:
        assert _own_call_ran(client.query(PROMPT))
