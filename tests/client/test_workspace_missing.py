"""A workspace that is missing, or a file, is refused before the agent starts, with one typed
error naming it, in print mode and ACP mode alike: ``WorkspaceNotFoundError`` ("the workspace
directory does not exist: …"), never ``AgentNotFoundError`` ("install the Cursor CLI", what a
failed ``chdir`` of ACP's process became) nor the agent's exit 1 (print mode's). The same
check refuses ``create_chat`` in both modes, with a remedy about the workspace (not "check
the chat id")."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from cursor_agent_api import (
    AgentConfig,
    AgentNotFoundError,
    AgentStartError,
    AsyncCursorAgentClient,
    CursorAgentClient,
    WorkspaceNotFoundError,
)


def _place(tmp_path: Path, kind: str) -> Path:
    if kind == "missing":
        return tmp_path / "gone" / "dir"
    path = tmp_path / "a-file"
    path.write_text("x")
    return path


@pytest.mark.parametrize("kind, says", [("missing", "does not exist"),
                                        ("file", "is not a directory")])
@pytest.mark.parametrize("transport", ["print", "acp"])
def test_a_turn_in_a_workspace_that_is_not_there_is_refused_before_the_agent_starts(
        sim: Callable[..., AgentConfig], argvs: list[list[str]], tmp_path: Path,
        transport: str, kind: str, says: str) -> None:
    workspace = str(_place(tmp_path, kind))
    with CursorAgentClient(sim(transport=transport, workspace=workspace)) as client, \
            pytest.raises(WorkspaceNotFoundError) as caught:
        client.query("hello")
    err = caught.value
    assert says in str(err) and repr(workspace) in str(err)
    assert isinstance(err, AgentStartError) and not isinstance(err, AgentNotFoundError)
    assert "install" not in str(err) and "--workspace" in err.cli_message()
    assert argvs == []  # nothing was started


@pytest.mark.parametrize("transport", ["print", "acp"])
def test_the_async_client_refuses_it_the_same(sim: Callable[..., AgentConfig],
                                              argvs: list[list[str]], tmp_path: Path,
                                              transport: str) -> None:
    config = sim(transport=transport, workspace=str(tmp_path / "gone"))

    async def main() -> None:
        client = AsyncCursorAgentClient(config)
        try:
            await client.query("hello")
        finally:
            await client.aclose()

    with pytest.raises(WorkspaceNotFoundError, match="does not exist"):
        asyncio.run(main())
    assert argvs == []


@pytest.mark.parametrize("transport", ["print", "acp"])
def test_a_turn_after_the_workspace_went_is_refused_with_the_same_error(
        sim: Callable[..., AgentConfig], tmp_path: Path, transport: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with CursorAgentClient(sim(transport=transport, workspace=str(workspace))) as client:
        assert client.query("hello").success  # (ACP: its process now runs)
        workspace.rmdir()
        with pytest.raises(WorkspaceNotFoundError, match="does not exist"):
            client.query("hello again")


@pytest.mark.parametrize("transport", ["print", "acp"])
def test_create_chat_in_a_missing_workspace_names_the_workspace_remedy(
        sim: Callable[..., AgentConfig], argvs: list[list[str]], tmp_path: Path,
        transport: str) -> None:
    with CursorAgentClient(sim(transport=transport, workspace=str(tmp_path / "gone"))) as client, \
            pytest.raises(WorkspaceNotFoundError) as caught:
        client.create_chat()
    assert "existing directory" in str(caught.value)
    assert "chat id" not in str(caught.value)
    assert argvs == []
