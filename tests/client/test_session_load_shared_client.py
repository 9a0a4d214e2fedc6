"""Wave 10: ``load(path, client)`` keeps the client given — its tools, its ``agent acp``
process, the caller's lifecycle — and applies the file's workspace and model and ``load``'s
fields to each of the session's turns; ``load(path, tools=[...])`` serves tools too."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from cursor_agent_api import (
    AsyncConversationSession,
    AsyncCursorAgentClient,
    ConversationSession,
    CursorAgentClient,
)
from cursor_agent_api.protocol import ToolStatus
from cursor_agent_api.sim.store import workspace_key
from cursor_agent_api.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@pytest.fixture(autouse=True)
def private_homes(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tools' injection journals and the agent's data dir in private directories."""
    monkeypatch.setenv("CURSOR_AGENT_API_HOME", str(tmp_path_factory.mktemp("api-home")))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("user-data")))  # the journals
    monkeypatch.setenv("CURSOR_DATA_DIR", str(tmp_path_factory.mktemp("cursor-data")))


def _added(result, total: int) -> bool:
    calls = [c for c in result.tool_calls if c.mcp_tool == "add"]
    return bool(calls) and all(c.status is ToolStatus.SUCCEEDED for c in calls) \
        and calls[-1].local is not None and calls[-1].local.value == total


def test_load_keeps_the_client_and_its_tools(sim, cursor_sim_workspace, tmp_path, monkeypatch, argvs):
    monkeypatch.chdir(cursor_sim_workspace)  # workspace=None: the agent's is ours
    path = tmp_path / "chat.json"
    with CursorAgentClient(sim(workspace=None), tools=[add]) as client:
        first = ConversationSession(client)
        assert _added(first.send('Use add {"a": 2, "b": 3}'), 5)
        first.save(path)  # writes the absolute workspace

        later = ConversationSession.load(path, client)
        assert later.client is client
        assert later.config.workspace == str(cursor_sim_workspace)
        result = later.send('Use add {"a": 4, "b": 5}')
        assert _added(result, 9), result.result
        assert result.session_id == first.session_id
        assert f"--resume={first.session_id}" in argvs[-1]
        later.close()  # the client is the caller's: still open, still serving its tools
        assert client.config.workspace is None and client.config.timeout == 90.0  # (the sim fixture's)

        again = ConversationSession.load(path, client, timeout=600)  # load's fields, per turn
        assert again.client is client and again.config.timeout == 600.0
        assert _added(again.send('Use add {"a": 1, "b": 1}'), 2)
        assert client.config.timeout == 90.0


def test_async_load_keeps_the_client_and_its_tools(sim, cursor_sim_workspace, tmp_path, monkeypatch):
    monkeypatch.chdir(cursor_sim_workspace)
    path = tmp_path / "chat.json"

    async def main() -> None:
        async with AsyncCursorAgentClient(sim(workspace="."), tools=[add]) as client:
            first = AsyncConversationSession(client)
            assert _added(await first.send('Use add {"a": 2, "b": 3}'), 5)
            first.save(path)
            later = AsyncConversationSession.load(path, client, model="gpt-5")
            assert later.client is client and later.config.model == "gpt-5"
            stream = later.send_stream('Use add {"a": 4, "b": 5}')
            async for _ in stream:
                pass
            result = await later.finalize_stream(stream)
            assert _added(result, 9) and result.session_id == first.session_id
            await later.aclose()
            assert client.config.model is None

    asyncio.run(main())


def test_load_takes_tools(sim, tmp_path):
    config = sim()
    path = tmp_path / "chat.json"
    with ConversationSession(config, tools=[add]) as session:
        assert _added(session.send('Use add {"a": 2, "b": 3}'), 5)
        session.save(path)
    env = {"CURSOR_CONFIG_DIR": config.env["CURSOR_CONFIG_DIR"]}
    with ConversationSession.load(path, tools=[add], env=env) as later:
        result = later.send('Use add {"a": 4, "b": 5}')
        assert _added(result, 9) and result.session_id == session.session_id
    with ConversationSession.load(path, config, tools=[add]) as later:
        assert _added(later.send('Use add {"a": 1, "b": 2}'), 3)
    with CursorAgentClient(config) as client, \
            pytest.raises(TypeError, match="tools"):
        ConversationSession.load(path, client, tools=[add])


def test_a_loaded_session_that_shares_its_client_creates_its_chat_in_the_file_workspace(
        sim, cursor_sim_workspace, cursor_sim_config_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(cursor_sim_workspace)
    path = tmp_path / "chat.json"
    chats = cursor_sim_config_dir / "chats" / workspace_key(str(cursor_sim_workspace.resolve()))
    with CursorAgentClient(sim(workspace=None)) as client:
        ConversationSession(client).save(path)  # before any turn: no chat id
        monkeypatch.chdir(tmp_path)  # elsewhere now: the file's workspace still holds the chat
        later = ConversationSession.load(path, client)
        chat = later.create_chat()
        assert (chats / chat).is_dir()
        assert later.send("hello").session_id == chat

    async def main() -> None:
        async with AsyncCursorAgentClient(sim(workspace=None)) as client:
            later = AsyncConversationSession.load(path, client)
            chat = await later.create_chat()
            assert (chats / chat).is_dir()

    asyncio.run(main())


def test_load_with_a_client_of_the_other_face_uses_its_config(sim, tmp_path):
    path = tmp_path / "chat.json"
    ConversationSession(sim(), session_id="8b72ae6d-ab42-4854-991e-6ecf580e66c2").save(path)
    with CursorAgentClient(sim(force_approve=True)) as client:
        later = AsyncConversationSession.load(path, client)
    assert later.client is not client and later.config.force_approve


def test_session_file_workspace_is_kept_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    session = ConversationSession(workspace=".")
    assert session.to_dict()["workspace"] == str(Path(tmp_path).resolve())
