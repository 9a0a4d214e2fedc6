"""Sessions: resume, create-chat, save/load, refused resumes — sync and async."""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat

import pytest

from cursor_agent_api import (
    AsyncConversationSession,
    AsyncCursorAgentClient,
    ConversationSession,
    CursorAgentClient,
    EventType,
    SessionError,
    create_chat,
)
from cursor_agent_api.runtime import process as process_module

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@pytest.fixture
def argvs(monkeypatch):
    """The argv of every process spawned."""
    seen: list[list[str]] = []
    original = process_module.AgentProcess.spawn.__func__

    async def spawn(cls, argv, *args, **kwargs):
        seen.append(list(argv))
        return await original(cls, argv, *args, **kwargs)

    monkeypatch.setattr(process_module.AgentProcess, "spawn", classmethod(spawn))
    return seen


def test_session_resumes_after_the_first_turn(sim, argvs):
    with ConversationSession(sim()) as session:
        assert session.session_id is None
        r1 = session.send("Remember that the password is swordfish")
        assert r1.success and session.session_id == r1.session_id
        r2 = session.send("What did I ask you to remember?")
    assert r2.success and "swordfish" in r2.result
    assert r2.session_id == r1.session_id
    assert not any(a.startswith("--resume") for a in argvs[0])
    assert f"--resume={r1.session_id}" in argvs[1]
    assert [t.prompt for t in session.history] == [
        "Remember that the password is swordfish", "What did I ask you to remember?"]


def test_send_stream_and_finalize(sim):
    with ConversationSession(sim()) as session:
        stream = session.send_stream("Remember the number 42")
        types = [e.type for e in stream]
        r1 = session.finalize_stream(stream)  # the stream knows its prompt
        assert session.finalize_stream("Remember the number 42", stream) is r1  # idempotent
        assert types[-1] is EventType.RESULT_SUCCESS and r1.success
        # an un-finalized stream is finalized before the next turn
        session.send_stream("What did I ask you to remember?")
        r3 = session.send("What was my previous question?")
    assert len(session.history) == 3
    assert "remember" in session.history[1].result.lower() or "42" in session.history[1].result
    assert "What did I ask you to remember?" in r3.result


def test_save_and_load(sim, tmp_path):
    path = tmp_path / "chat.json"
    config = sim(model="gpt-5")
    with ConversationSession(config) as session:
        session.send("Remember that the code word is mango")
        session.save(path)
        chat_id = session.session_id
    data = json.loads(path.read_text())
    assert data["chat_id"] == chat_id and data["model"] == "gpt-5"
    assert data["workspace"] == config.workspace and len(data["history"]) == 1
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert os.listdir(tmp_path) == ["chat.json"]  # no temp file left behind
    base = sim()  # a fresh config: the file brings workspace, model and chat id
    with ConversationSession.load(path, base.with_overrides(workspace=None, model=None)) as later:
        assert later.session_id == chat_id and later.config.model == "gpt-5"
        assert later.config.workspace == config.workspace
        r = later.send("What did I ask you to remember?")
    assert r.success and "mango" in r.result and r.session_id == chat_id
    assert len(later.history) == 2


def test_save_overwrites_atomically(sim, tmp_path):
    path = tmp_path / "chat.json"
    path.write_text("old")
    session = ConversationSession(sim(), session_id="00000000-0000-4000-8000-000000000000")
    session.save(path)
    assert json.loads(path.read_text())["chat_id"] == "00000000-0000-4000-8000-000000000000"
    session.close()


def test_load_rejects_a_bad_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SessionError, match="not JSON"):
        ConversationSession.load(bad)
    bad.write_text(json.dumps({"version": 1, "chat_id": 5}))
    with pytest.raises(SessionError, match="chat_id"):
        ConversationSession.load(bad)
    bad.write_text(json.dumps({"version": 99}))
    with pytest.raises(SessionError, match="version"):
        ConversationSession.load(bad)


def test_malformed_session_id_is_refused_at_once(sim, argvs):
    # checked before any agent runs: a chat id is a UUID, and never becomes an option
    with pytest.raises(SessionError, match="must be a UUID"):
        ConversationSession(sim(), session_id="not-a-uuid")
    with pytest.raises(SessionError, match="must be a UUID"):
        AsyncConversationSession(sim(), session_id="--force")
    assert argvs == []


def test_refused_resume_is_a_session_error(sim):
    with ConversationSession(sim("bad-resume"),
                             session_id="8b72ae6d-ab42-4854-991e-6ecf580e66c2") as session:
        r = session.send("hello")
    assert not r.success and isinstance(r.exception, SessionError)
    assert "Persistent-session chat ID must be a UUID" in r.error
    with pytest.raises(SessionError, match="must be a UUID"):
        r.raise_for_error()


def test_chat_busy_is_a_session_error(sim):
    with ConversationSession(sim("chat-busy")) as session:
        r = session.send("hello")
    assert isinstance(r.exception, SessionError) and "may still be running" in r.error


def test_create_chat_then_resume(sim, spawned, argvs):
    config = sim()
    chat = create_chat(config)
    assert UUID.match(chat)
    with ConversationSession(config) as session:
        assert session.create_chat() != chat
        new = session.session_id
        r = session.send("What is 2 + 2?")
    assert r.success and r.session_id == new
    assert argvs[0][1:] == ["create-chat"] and any(a.startswith("--resume=") for a in argvs[2])
    with pytest.raises(SessionError):
        session.create_chat()


def test_create_chat_auth_error(sim):
    from cursor_agent_api import AuthenticationError

    with CursorAgentClient(sim("auth")) as client, pytest.raises(AuthenticationError):
        client.create_chat()


def test_async_session(sim, tmp_path, argvs):
    async def main():
        session = AsyncConversationSession(AsyncCursorAgentClient(sim()))
        r1 = await session.send("Remember that the colour is teal")
        stream = session.send_stream("What did I ask you to remember?")
        texts = [e.text async for e in stream if e.type is EventType.RESULT_SUCCESS]
        r2 = await session.finalize_stream("What did I ask you to remember?", stream)
        session.save(tmp_path / "s.json")
        later = AsyncConversationSession.load(tmp_path / "s.json", sim())
        r3 = await later.send("What was my previous question?")
        chat = await later.client.create_chat()
        return r1, texts, r2, r3, later, chat

    r1, texts, r2, r3, later, chat = asyncio.run(main())
    assert r1.success and "teal" in texts[0] and r2.result == texts[0]
    assert r3.session_id == r1.session_id and len(later.history) == 3
    assert "What did I ask you to remember?" in r3.result
    assert UUID.match(chat)
    assert sum(any(x.startswith("--resume=") for x in a) for a in argvs) == 2


def test_async_send_stream_finalizes_the_previous_one_like_sync(sim, argvs):
    """The same semantics for both faces: a stream not finalized is finalized (consumed,
    recorded) before the next turn starts, and that turn resumes the chat it reported."""
    async def main():
        session = AsyncConversationSession(sim())
        first = session.send_stream("Remember the number 42")
        async for _ in first:
            break
        second = session.send_stream("What did I ask you to remember?")
        texts = [e.text async for e in second if e.type is EventType.RESULT_SUCCESS]
        await session.finalize_stream(second)
        assert await session.finalize_stream(first) is first.result  # recorded once
        return session, first, texts

    session, first, texts = asyncio.run(main())
    assert [t.prompt for t in session.history] == ["Remember the number 42",
                                                   "What did I ask you to remember?"]
    assert first.result.success and "42" in texts[0]
    assert sum(any(x.startswith("--resume=") for x in a) for a in argvs) == 1


def test_session_rejects_resume_override(sim):
    with ConversationSession(sim()) as session, pytest.raises(TypeError, match="resume"):
        session.send("hi", resume="x")


def test_session_takes_config_fields(sim):
    config = sim()
    with ConversationSession(config, model="gpt-5") as session:
        assert session.config.model == "gpt-5" and session.config.workspace == config.workspace
        assert session.send("What is 2 + 2?").result == "4"
    with pytest.raises(TypeError, match="client"):
        ConversationSession(CursorAgentClient(config), model="x")
    assert AsyncConversationSession(config, model="gpt-5").config.model == "gpt-5"
