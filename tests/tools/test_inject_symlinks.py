"""A workspace whose ``.cursor`` (or its ``mcp.json``/``cli.json``) is a symbolic link — planted
by a repository, pointing at the user's own ``~/.cursor`` or anywhere else — is never written
through: the injection refuses, with nothing changed on either side of the link."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api.tools.inject import InjectionError, WorkspaceInjection

from .conftest import tree_hash

SERVERS = {"app": {"url": "http://127.0.0.1:9/mcp"}}
ALLOW = ["Mcp(app:ping)"]


@pytest.fixture
def user_cursor(tmp_path: Path) -> Path:
    """A stand-in for the user's own ``~/.cursor``, with a global mcp.json."""
    home = tmp_path / "home" / ".cursor"
    home.mkdir(parents=True)
    (home / "mcp.json").write_text('{"mcpServers": {"mine": {"command": "x"}}}\n')
    return home


def test_a_cursor_dir_linked_to_the_users_own_is_not_written_through(
        tmp_path: Path, user_cursor: Path) -> None:
    ws = tmp_path / "repo"
    ws.mkdir()
    (ws / ".cursor").symlink_to(user_cursor)
    before = tree_hash(user_cursor)
    with pytest.raises(InjectionError, match="symbolic link"):
        WorkspaceInjection(ws, SERVERS, ALLOW, root=tmp_path / "journal").enter()
    assert tree_hash(user_cursor) == before
    assert (ws / ".cursor").is_symlink()


@pytest.mark.parametrize("name", ["mcp.json", "cli.json"])
@pytest.mark.parametrize("dangling", [False, True])
def test_a_file_linked_out_of_the_workspace_is_not_written_through(
        tmp_path: Path, user_cursor: Path, name: str, dangling: bool) -> None:
    ws = tmp_path / "repo"
    (ws / ".cursor").mkdir(parents=True)
    target = user_cursor / ("new.json" if dangling else "mcp.json")
    (ws / ".cursor" / name).symlink_to(target)
    before = tree_hash(user_cursor)
    with pytest.raises(InjectionError, match="symbolic link"):
        WorkspaceInjection(ws, SERVERS, ALLOW, root=tmp_path / "journal").enter()
    assert tree_hash(user_cursor) == before and not (user_cursor / "new.json").exists()
    assert (ws / ".cursor" / name).is_symlink()  # the repository's link is left as it is


def test_a_plain_cursor_dir_is_still_injected_and_restored(tmp_path: Path) -> None:
    ws = tmp_path / "repo"
    (ws / ".cursor").mkdir(parents=True)
    (ws / ".cursor" / "mcp.json").write_text('{"mcpServers": {}}\n')
    before = tree_hash(ws)
    with WorkspaceInjection(ws, SERVERS, ALLOW, root=tmp_path / "journal"):
        assert '"app"' in (ws / ".cursor" / "mcp.json").read_text()
    assert tree_hash(ws) == before


def test_a_client_turn_in_such_a_workspace_fails_clearly(
        sim: Callable[..., Any], cursor_sim_workspace: Path, user_cursor: Path) -> None:
    from cursor_agent_api import CursorAgentClient

    from .conftest import PROMPT, TOOLS

    (cursor_sim_workspace / ".cursor").symlink_to(user_cursor)
    before = tree_hash(user_cursor)
    with CursorAgentClient(sim(), tools=TOOLS) as client, \
            pytest.raises(InjectionError, match="symbolic link"):  # as for a .cursor not JSON
        client.query(PROMPT)
    assert tree_hash(user_cursor) == before


def test_the_turns_injection_error_is_a_cursor_agent_error(tmp_path: Path) -> None:
    """docs/client.md: every error is under CursorAgentError; a turn with mcp_servers whose
    workspace's .cursor is a link raises one (it was a bare RuntimeError)."""
    from cursor_agent_api import AgentConfig, CursorAgentClient
    from cursor_agent_api.errors import CursorAgentError
    from cursor_agent_api.testing import sim_binary
    from cursor_agent_api.tools import InjectionError as Exported

    assert Exported is InjectionError
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (ws / ".cursor").symlink_to(tmp_path / "elsewhere")
    config = AgentConfig(agent_binary=sim_binary(), trust=True, workspace=str(ws),
                         mcp_servers={"app": {"url": "http://127.0.0.1:9/mcp"}})
    with CursorAgentClient(config) as client, pytest.raises(CursorAgentError, match="symbolic link"):
        client.query("hi")
