"""Sessions take bytes prompts as the clients do: UTF-8 bytes are the same turn as their text,
recorded and saved as text; bytes that are not UTF-8 fail before the turn starts.

A session recorded a bytes prompt as bytes (``save`` then failed: bytes are not JSON), and
``finalize_stream`` decoded a non-UTF-8 one after the turn had run (``UnicodeDecodeError``).
"""

from __future__ import annotations

import asyncio

import pytest

from cursor_agent_api import AsyncConversationSession, ConversationSession
from cursor_agent_api.sessions import read_session_file

NOT_UTF8 = "the prompt is not UTF-8 text: byte 3 is 0xE9"


def test_sync_utf8_bytes_are_recorded_and_saved_as_text(sim, tmp_path):
    path = tmp_path / "chat.json"
    with ConversationSession(sim()) as session:
        r = session.send("Remember the word café".encode())
        assert r.success
        stream = session.send_stream(b"What did I ask you to remember?")
        list(stream)
        session.finalize_stream(stream)
        session.save(path)
    assert [t.prompt for t in session.history] == [
        "Remember the word café", "What did I ask you to remember?"]
    assert [t.prompt for t in read_session_file(path)["history"]] == [
        "Remember the word café", "What did I ask you to remember?"]


def test_sync_bytes_that_are_not_utf8_fail_before_the_turn(sim, spawned):
    with ConversationSession(sim()) as session:
        with pytest.raises(ValueError, match=NOT_UTF8):
            session.send(b"caf\xe9 bytes")
        with pytest.raises(ValueError, match=NOT_UTF8):
            session.send_stream(b"caf\xe9")
        assert session.history == [] and session.session_id is None
        assert session.send("hello").success  # the session goes on
    assert len(spawned) == 1  # the refused prompts started nothing


def test_async_bytes_prompts_like_sync(sim, spawned, tmp_path):
    path = tmp_path / "chat.json"

    async def main() -> AsyncConversationSession:
        async with AsyncConversationSession(sim()) as session:
            with pytest.raises(ValueError, match=NOT_UTF8):
                await session.send(b"caf\xe9 bytes")
            with pytest.raises(ValueError, match=NOT_UTF8):
                session.send_stream(b"caf\xe9")
            assert (await session.send("Remember the word café".encode())).success
            stream = session.send_stream(b"And again?")
            with pytest.raises(ValueError, match=NOT_UTF8):
                session.send_stream(b"caf\xe9")  # refused with a stream pending, too
            async for _ in stream:
                pass
            await session.finalize_stream(stream)
            session.save(path)
            return session

    session = asyncio.run(main())
    assert [t.prompt for t in session.history] == ["Remember the word café", "And again?"]
    assert [t.prompt for t in read_session_file(path)["history"]] == [
        "Remember the word café", "And again?"]
    assert len(spawned) == 2


def test_a_foreign_stream_of_non_utf8_bytes_is_not_the_sessions(sim, tmp_path):
    # a stream the client made (it sends bytes as given) is not the session's turn: before
    # review audit3 F5 the session recorded it (its byte as an escape) and adopted its chat;
    # now finalize_stream refuses it and the session keeps only text prompts of its own
    with ConversationSession(sim()) as session:
        with session.client.query_stream(b"caf\xe9") as stream:
            with pytest.raises(ValueError, match="not started by this session"):
                session.finalize_stream(stream)
            assert stream.wait().success  # the caller's to wait for
        session.save(tmp_path / "chat.json")
    assert session.history == [] and session.session_id is None
    assert read_session_file(tmp_path / "chat.json")["history"] == []
