"""``finalize_stream`` takes only a stream the session started (its ``send_stream``): another
session's stream, or one of the client's own ``query_stream``, is a ``ValueError`` and
changes nothing of the session (before, it was recorded in its history and the session
adopted that stream's chat, silently continuing another conversation). Sync and async."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from cursor_agent_api import AgentConfig, AsyncConversationSession, ConversationSession

REMEMBER = "Remember the codeword heron"


def test_another_sessions_stream_is_refused_and_changes_nothing(
        sim: Callable[..., AgentConfig]) -> None:
    with ConversationSession(sim()) as a, ConversationSession(sim()) as b:
        a.send(REMEMBER)
        chat, prompts = a.session_id, [t.prompt for t in a.history]
        stream = b.send_stream("hi")
        for finalize in (lambda: a.finalize_stream(stream),
                         lambda: a.finalize_stream("hi", stream)):  # the older form too
            with pytest.raises(ValueError, match="not started by this session"):
                finalize()
        assert a.session_id == chat and [t.prompt for t in a.history] == prompts
        assert b.finalize_stream(stream).success  # still b's to record
        assert [t.prompt for t in b.history] == ["hi"]
        assert "heron" in a.send("What did I ask you to remember?").result


def test_the_clients_own_stream_is_refused(sim: Callable[..., AgentConfig]) -> None:
    with ConversationSession(sim()) as a:
        a.send(REMEMBER)
        chat = a.session_id
        with a.client.query_stream("hello") as stream, \
                pytest.raises(ValueError, match="send_stream"):
            a.finalize_stream(stream)
        assert a.session_id == chat and len(a.history) == 1


def test_something_else_is_a_type_error(sim: Callable[..., AgentConfig]) -> None:
    with ConversationSession(sim()) as a:
        with pytest.raises(TypeError, match="stream"):
            a.finalize_stream("hi")
        with pytest.raises(TypeError, match="stream"):
            a.finalize_stream("hi", "there")
        assert a.history == [] and a.session_id is None


def test_the_async_session_refuses_them_too(sim: Callable[..., AgentConfig]) -> None:
    async def main() -> None:
        async with AsyncConversationSession(sim()) as a, AsyncConversationSession(sim()) as b:
            await a.send(REMEMBER)
            chat = a.session_id
            stream = b.send_stream("hi")
            with pytest.raises(ValueError, match="not started by this session"):
                await a.finalize_stream(stream)
            with pytest.raises(ValueError, match="not started by this session"):
                await a.finalize_stream("hi", stream)
            assert (await b.finalize_stream(stream)).success
            async with a.client.query_stream("hello") as own:
                with pytest.raises(ValueError, match="send_stream"):
                    await a.finalize_stream(own)
            with pytest.raises(TypeError, match="stream"):
                await a.finalize_stream("hi")
            assert a.session_id == chat and [t.prompt for t in a.history] == [REMEMBER]
            assert "heron" in (await a.send("What did I ask you to remember?")).result

    asyncio.run(main())


def test_its_own_stream_is_still_taken_once_dropped(sim: Callable[..., AgentConfig]) -> None:
    """A stream the session started and has already recorded (or, async, dropped because it
    never ran) is still the session's: finalize_stream answers as before."""
    with ConversationSession(sim()) as a:
        stream = a.send_stream(REMEMBER)
        first = a.finalize_stream(stream)
        a.send("hi")
        assert a.finalize_stream(stream) is first  # idempotent, recorded once
        assert len(a.history) == 2

    async def main() -> None:
        async with AsyncConversationSession(sim()) as s:
            first = s.send_stream(REMEMBER)
            second = s.send_stream("hi")  # deferred: waits for the first
            second.cancel()  # never starts: dropped
            await s.finalize_stream(first)
            with pytest.raises(RuntimeError, match="cancelled before it started"):
                await s.finalize_stream(second)  # its own error, not "not started by..."
            assert [t.prompt for t in s.history] == [REMEMBER]

    asyncio.run(main())
