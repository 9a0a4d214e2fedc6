"""A turn with ``tools=`` or ``mcp_servers=`` whose workspace is missing, or a file, is refused
with the same ``WorkspaceNotFoundError`` as a turn without them ("the workspace directory
does not exist: …" / "the workspace is not a directory: …", an ``AgentStartError``), checked
once, before the injection: nothing is written, no tool server started, no agent run. Before,
the injection refused it first with ``InjectionError`` ("the workspace … is not a
directory"), which is no ``AgentStartError`` — sync and async, print and ACP, sessions."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import (
    AgentConfig,
    AgentStartError,
    AsyncCursorAgentClient,
    ConversationSession,
    CursorAgentClient,
    WorkspaceNotFoundError,
)

from .conftest import TOOLS

SERVERS = {"app": {"url": "http://127.0.0.1:9/mcp"}}


def _place(tmp_path: Path, kind: str) -> Path:
    if kind == "missing":
        return tmp_path / "gone" / "dir"
    path = tmp_path / "a-file"
    path.write_text("x")
    return path


SAYS = {"missing": "does not exist", "file": "is not a directory"}


def _nothing_written(tmp_path: Path, journal_home: Path) -> None:
    """No ``.cursor`` anywhere, no journal in the per-user data dir."""
    assert not list(tmp_path.rglob(".cursor"))
    data = Path(os.environ["XDG_DATA_HOME"])
    assert not [p for p in data.rglob("*") if p.is_file()]


def _check(err: BaseException, workspace: Path, kind: str) -> None:
    assert isinstance(err, WorkspaceNotFoundError) and isinstance(err, AgentStartError)
    assert SAYS[kind] in str(err) and repr(str(workspace)) in str(err)


@pytest.mark.parametrize("kind", ["missing", "file"])
@pytest.mark.parametrize("transport", ["print", "acp"])
@pytest.mark.parametrize("given", ["tools", "mcp_servers"])
def test_the_sync_client_refuses_it_as_without_tools(
        sim: Callable[..., AgentConfig], tmp_path: Path, journal_home: Path,
        kind: str, transport: str, given: str) -> None:
    workspace = _place(tmp_path, kind)
    extra: dict[str, Any] = {"tools": TOOLS} if given == "tools" else {}
    fields = {"mcp_servers": SERVERS} if given == "mcp_servers" else {}
    with CursorAgentClient(sim(transport=transport, **fields), **extra) as client:
        with pytest.raises(WorkspaceNotFoundError) as caught:
            client.query("hello", workspace=str(workspace))
        _check(caught.value, workspace, kind)
        with pytest.raises(WorkspaceNotFoundError) as caught, \
                client.query_stream("hello", workspace=str(workspace)) as stream:
            list(stream)
        _check(caught.value, workspace, kind)
    _nothing_written(tmp_path, journal_home)


@pytest.mark.parametrize("transport", ["print", "acp"])
def test_the_async_client_refuses_it_too(sim: Callable[..., AgentConfig], tmp_path: Path,
                                         journal_home: Path, transport: str) -> None:
    workspace = _place(tmp_path, "missing")

    async def main() -> list[BaseException]:
        raised: list[BaseException] = []
        async with AsyncCursorAgentClient(sim(transport=transport, mcp_servers=SERVERS),
                                          tools=TOOLS) as client:
            for attempt in (lambda: client.query("hi", workspace=str(workspace)),
                            lambda: client.query_stream("hi", workspace=str(workspace)).wait()):
                try:
                    await attempt()
                except Exception as e:  # what was raised is the subject
                    raised.append(e)
        return raised

    raised = asyncio.run(main())
    assert len(raised) == 2
    for err in raised:
        _check(err, workspace, "missing")
    _nothing_written(tmp_path, journal_home)


def test_a_session_with_tools_refuses_it_too(sim: Callable[..., AgentConfig], tmp_path: Path,
                                             journal_home: Path) -> None:
    workspace = _place(tmp_path, "file")
    with ConversationSession(sim(workspace=str(workspace)), tools=TOOLS) as session:
        with pytest.raises(WorkspaceNotFoundError) as caught:
            session.send("hello")
        assert session.history == [] and session.session_id is None
    _check(caught.value, workspace, "file")
    _nothing_written(tmp_path, journal_home)
