"""A session's chat lives in one folder: the one its first turn ran in (made absolute then).

The CLI keeps chats per workspace, so a session whose workspace is ``None`` (the current
directory) or relative (``"."``, ``"ws"``) must not follow the program's ``os.chdir``: every
later turn, ``save()`` and so ``load()`` use the folder of the first turn. Before, each turn
resolved the workspace again against the current directory (after a chdir: a
``WorkspaceNotFoundError``, or, where another folder of that name exists, a silent new chat
there), and ``save()`` recorded the current directory at save time. Sync and async alike."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import (
    AgentConfig,
    AsyncConversationSession,
    ConversationSession,
)

REMEMBER = "Remember that the deploy target is eu-west-1"
ASK = "What did I ask you to remember?"


class Places:
    """``project/ws`` (where the chat is held) and ``elsewhere/ws`` (a folder of the same
    name, where the program moves: a relative ``"ws"`` resolves there after the chdir)."""

    def __init__(self, tmp_path: Path) -> None:
        self.project = tmp_path / "project"
        self.ws = self.project / "ws"
        self.ws.mkdir(parents=True)
        self.elsewhere = tmp_path / "elsewhere"
        (self.elsewhere / "ws").mkdir(parents=True)

    def start_dir(self, workspace: str | None) -> Path:
        """Where the program is when the first turn runs, so that ``workspace`` is ``ws``."""
        return self.project if workspace == "ws" else self.ws


@pytest.fixture
def places(tmp_path: Path) -> Places:
    return Places(tmp_path)


WORKSPACES = [None, ".", "ws"]


def _ran_in(result: Any) -> str | None:
    """The folder the simulator ran the turn in (its init event's ``cwd``)."""
    return next((e.data.get("cwd") for e in result.events if "cwd" in e.data), None)


@pytest.mark.parametrize("workspace", WORKSPACES)
def test_save_records_the_folder_of_the_turns_not_the_current_one(
        sim: Callable[..., AgentConfig], places: Places, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, workspace: str | None) -> None:
    path = tmp_path / "chat.json"
    monkeypatch.chdir(places.start_dir(workspace))
    config = sim(workspace=workspace)
    with ConversationSession(config) as session:
        first = session.send(REMEMBER)
        assert first.success and _ran_in(first) == str(places.ws)
        monkeypatch.chdir(places.elsewhere)  # the program moves on (a library, a build step)
        session.save(path)
    assert json.loads(path.read_text())["workspace"] == str(places.ws)
    with ConversationSession.load(path, env=dict(config.env)) as later:  # (values: not saved)
        again = later.send(ASK)
    assert again.success and "eu-west-1" in again.result, again.result
    assert again.session_id == first.session_id and _ran_in(again) == str(places.ws)


@pytest.mark.parametrize("workspace", WORKSPACES)
@pytest.mark.parametrize("stream", [False, True], ids=["send", "send_stream"])
def test_a_live_session_keeps_its_folder_after_a_chdir(
        sim: Callable[..., AgentConfig], places: Places, monkeypatch: pytest.MonkeyPatch,
        workspace: str | None, stream: bool) -> None:
    monkeypatch.chdir(places.start_dir(workspace))
    with ConversationSession(sim(workspace=workspace)) as session:
        first = session.send(REMEMBER)
        monkeypatch.chdir(places.elsewhere)
        if stream:
            turn = session.send_stream(ASK)
            list(turn)
            again = session.finalize_stream(turn)
        else:
            again = session.send(ASK)
        pinned = session.config.workspace
    assert again.success and "eu-west-1" in again.result, again.result
    assert again.session_id == first.session_id and _ran_in(again) == str(places.ws)
    assert pinned == str(places.ws)  # what config says: the folder, absolute


def test_a_relative_workspace_with_no_namesake_after_the_chdir_still_runs(
        sim: Callable[..., AgentConfig], places: Places, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    bare = tmp_path / "bare"  # no "ws" here: the turn used to raise WorkspaceNotFoundError 'ws'
    bare.mkdir()
    monkeypatch.chdir(places.project)
    with ConversationSession(sim(workspace="ws")) as session:
        session.send(REMEMBER)
        monkeypatch.chdir(bare)
        again = session.send(ASK)
    assert again.success and "eu-west-1" in again.result, again.result


def test_the_folder_is_the_first_turns_not_the_one_at_creation(
        sim: Callable[..., AgentConfig], places: Places, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(places.elsewhere)
    with ConversationSession(sim(workspace=None)) as session:  # made before the program moved
        assert session.config.workspace is None
        monkeypatch.chdir(places.ws)
        first = session.send(REMEMBER)
        monkeypatch.chdir(places.elsewhere)
        again = session.send(ASK)
    assert _ran_in(first) == _ran_in(again) == str(places.ws)
    assert "eu-west-1" in again.result


@pytest.mark.parametrize("workspace", WORKSPACES)
def test_the_async_session_keeps_its_folder_too(
        sim: Callable[..., AgentConfig], places: Places, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, workspace: str | None) -> None:
    path = tmp_path / "chat.json"
    monkeypatch.chdir(places.start_dir(workspace))

    async def main() -> tuple[Any, Any, Any]:
        async with AsyncConversationSession(sim(workspace=workspace)) as session:
            first = await session.send(REMEMBER)
            monkeypatch.chdir(places.elsewhere)
            again = await session.send(ASK)
            stream = session.send_stream(ASK)
            async for _ in stream:
                pass
            streamed = await session.finalize_stream(stream)
            session.save(path)
            return first, again, streamed

    first, again, streamed = asyncio.run(main())
    for result in (again, streamed):
        assert result.success and "eu-west-1" in result.result, result.result
        assert result.session_id == first.session_id and _ran_in(result) == str(places.ws)
    assert json.loads(path.read_text())["workspace"] == str(places.ws)


def test_create_chat_pins_the_folder(sim: Callable[..., AgentConfig], places: Places,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(places.ws)
    with ConversationSession(sim(workspace=None)) as session:
        chat = session.create_chat()
        monkeypatch.chdir(places.elsewhere)
        first = session.send(REMEMBER)
        again = session.send(ASK)
    assert first.session_id == again.session_id == chat
    assert _ran_in(first) == str(places.ws) and "eu-west-1" in again.result


def test_a_first_turn_that_made_no_chat_fixes_no_folder(
        sim: Callable[..., AgentConfig], places: Places, monkeypatch: pytest.MonkeyPatch) -> None:
    """A first turn refused before it made a chat (a mistyped ``workspace=``) fixes nothing
    (review 37: every later turn, and save(), were refused in that missing folder)."""
    from cursor_agent_api.errors import WorkspaceNotFoundError

    monkeypatch.chdir(places.ws)
    with ConversationSession(sim(workspace=None)) as session:
        with pytest.raises(WorkspaceNotFoundError):
            session.send(REMEMBER, workspace="typo")
        first = session.send(REMEMBER)
        monkeypatch.chdir(places.elsewhere)
        again = session.send(ASK)
    assert first.success and _ran_in(first) == _ran_in(again) == str(places.ws)
    assert "eu-west-1" in again.result


def test_a_removed_current_directory_is_the_turns_failure_not_the_sessions(
        sim: Callable[..., AgentConfig], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The program's current directory removed (review 37: ``FileNotFoundError`` from the
    session itself, where a client's turn fails with a result saying so)."""
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with ConversationSession(sim(workspace=None)) as session:
        result = session.send(REMEMBER)
    assert not result.success and result.exception is not None


@pytest.mark.parametrize("how", ["send", "save"])
def test_a_stream_left_unfinalized_fixes_its_own_folder(
        sim: Callable[..., AgentConfig], places: Places, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """The first turn streamed and not finalized, the program moves: the next ``send``
    records it first, and the chat's folder is that stream's, not the new turn's (review 40:
    it was the new turn's folder, and the chat was lost). ``save()`` the same."""
    monkeypatch.chdir(places.ws)
    with ConversationSession(sim(workspace=None)) as session:
        first = session.send_stream(REMEMBER)
        if how == "send":
            list(first)  # read, never finalized
        monkeypatch.chdir(places.elsewhere)  # (save: the first turn still under way)
        if how == "send":
            again = session.send(ASK)
            assert again.success and "eu-west-1" in again.result, again.result
            assert _ran_in(again) == str(places.ws)
        else:
            session.save(tmp_path / "chat.json")
            assert json.loads((tmp_path / "chat.json").read_text())["workspace"] == str(places.ws)
        assert session.config.workspace == str(places.ws)


@pytest.mark.parametrize("how", ["send", "send_stream", "async send", "async send_stream"])
def test_a_turn_in_another_folder_than_the_chats_is_refused(
        sim: Callable[..., AgentConfig], places: Places, monkeypatch: pytest.MonkeyPatch,
        how: str) -> None:
    """Once the session has a chat, a turn's ``workspace=`` naming another folder is a
    ``ValueError`` before anything runs: the agent keeps chats per folder, and the turn ran
    there with ``--resume``, "succeeded", and had lost the whole conversation (before)."""
    monkeypatch.chdir(places.ws)
    other = str(places.elsewhere / "ws")

    async def in_async() -> Any:
        async with AsyncConversationSession(sim(workspace=None)) as session:
            first = await session.send(REMEMBER)
            with pytest.raises(ValueError, match="another folder") as refused:
                if how == "async send":
                    await session.send(ASK, workspace=other)
                else:
                    session.send_stream(ASK, workspace=other)
            again = await session.send(ASK, workspace=".")  # same folder: runs
            return first, again, refused, len(session.history)

    if how.startswith("async"):
        first, again, refused, turns = asyncio.run(in_async())
    else:
        with ConversationSession(sim(workspace=None)) as session:
            first = session.send(REMEMBER)
            with pytest.raises(ValueError, match="another folder") as refused:
                if how == "send":
                    session.send(ASK, workspace=other)
                else:
                    session.send_stream(ASK, workspace=other)
            again = session.send(ASK, workspace=".")  # the chat's folder, relative: runs
            turns = len(session.history)
    message = str(refused.value)
    assert str(places.ws) in message and other in message, message
    assert turns == 2  # the refused turn recorded nothing
    assert again.success and "eu-west-1" in again.result, again.result
    assert again.session_id == first.session_id and _ran_in(again) == str(places.ws)


def test_a_loaded_session_refuses_a_turn_in_another_folder(
        sim: Callable[..., AgentConfig], places: Places, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A loaded session has its chat (the file's folder) before its first turn."""
    path = tmp_path / "chat.json"
    monkeypatch.chdir(places.ws)
    config = sim(workspace=None)
    with ConversationSession(config) as session:
        session.send(REMEMBER)
        session.save(path)
    with ConversationSession.load(path, env=dict(config.env)) as later:
        with pytest.raises(ValueError, match="another folder"):
            later.send(ASK, workspace=str(places.elsewhere / "ws"))
        again = later.send(ASK)
    assert again.success and "eu-west-1" in again.result, again.result


def test_a_turn_elsewhere_after_an_unfinalized_first_stream_is_refused(
        sim: Callable[..., AgentConfig], places: Places, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chat is made by a first turn streamed and not finalized: the next turn records it
    first, and only then is its folder known; a turn elsewhere is refused then."""
    monkeypatch.chdir(places.ws)
    with ConversationSession(sim(workspace=None)) as session:
        list(session.send_stream(REMEMBER))  # read, never finalized
        with pytest.raises(ValueError, match="another folder"):
            session.send(ASK, workspace=str(places.elsewhere / "ws"))
        again = session.send(ASK)
        assert len(session.history) == 2
    assert again.success and "eu-west-1" in again.result, again.result


def test_a_session_given_a_chat_id_and_no_folder_takes_the_turns(
        sim: Callable[..., AgentConfig], places: Places, monkeypatch: pytest.MonkeyPatch) -> None:
    """``session_id=`` without a workspace: the chat's folder is not known, so a turn's
    ``workspace=`` says it (review 42: it was refused, the current directory taken for the
    chat's). Once a turn ran, the folder is fixed, and another one is refused."""
    config = sim(workspace=str(places.ws))
    with ConversationSession(config) as first:
        chat = first.send(REMEMBER).session_id
    monkeypatch.chdir(places.elsewhere)
    with ConversationSession(config.with_overrides(workspace=None), session_id=chat) as later:
        again = later.send(ASK, workspace=str(places.ws))
        with pytest.raises(ValueError, match="another folder"):
            later.send(ASK, workspace=str(places.elsewhere / "ws"))
    assert again.success and "eu-west-1" in again.result, again.result
