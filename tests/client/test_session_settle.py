"""Wave 10: a session's streamed turns are settled whatever became of them.

A stream that never started (cancelled before its first step, a start that failed, a start
cut short by a timeout) is dropped with nothing recorded, and its predecessor is still
recorded: the session never refuses a later turn because of it. Every override of
``send_stream`` is checked when it is called, on both faces, before anything is finalized.
``aclose()`` stops every stream it has not recorded; ``save()`` records a stream that has
ended without being passed to ``finalize_stream()``.
"""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from cursor_agent_api import (
    AgentNotFoundError,
    AsyncConversationSession,
    AsyncCursorAgentClient,
    ConversationSession,
)
from cursor_agent_api.testing import Script, ScriptTransport

CHAT = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
LINES = [{"type": "system", "subtype": "init", "session_id": CHAT},
         {"type": "result", "subtype": "success", "result": "ok", "session_id": CHAT}]


def script(hang_on: bytes | None = None) -> ScriptTransport:
    """Every turn answers "ok" in chat CHAT, but the turn whose prompt is ``hang_on``: it
    starts the chat, then hangs (silent, alive) until it is signalled."""
    return ScriptTransport(lambda prompt: Script(LINES[:1], hang=True) if prompt == hang_on
                           else Script(LINES))


def prompts(session: AsyncConversationSession | ConversationSession) -> list[str]:
    return [t.prompt for t in session.history]


def test_async_stream_cancelled_before_it_started_is_dropped():
    async def main() -> None:
        t = script()
        session = AsyncConversationSession(transport=t)
        stream = session.send_stream("first")
        stream.cancel()  # changed my mind before iterating
        first = await session.send("second")
        again = await session.send("third")
        assert first.success and again.success
        assert prompts(session) == ["second", "third"] and t.prompts == [b"second", b"third"]
        await session.aclose()

    asyncio.run(main())


def test_async_stream_whose_start_failed_is_dropped(tmp_path):
    async def main() -> None:
        session = AsyncConversationSession(agent_binary=str(tmp_path / "no-such-agent"))
        stream = session.send_stream("first")
        with pytest.raises(AgentNotFoundError):
            async for _ in stream:
                pass
        t = script()
        result = await session.send("second", transport=t)
        assert result.success and prompts(session) == ["second"]
        await session.aclose()

    asyncio.run(main())


def test_async_deferred_stream_cancelled_before_it_started_keeps_its_predecessor():
    async def main() -> None:
        t = script()
        session = AsyncConversationSession(transport=t)
        session.send_stream("one")          # not consumed
        deferred = session.send_stream("two")
        deferred.cancel()
        result = await session.send("three")
        assert result.success
        assert prompts(session) == ["one", "three"] and t.prompts == [b"one", b"three"]
        await session.aclose()

    asyncio.run(main())


@pytest.mark.timeout(60)
def test_async_timeout_while_waiting_for_the_previous_turn_does_not_stick():
    async def main() -> None:
        t = script(hang_on=b"first")
        session = AsyncConversationSession(transport=t)
        first = session.send_stream("first")
        second = session.send_stream("second")
        with pytest.raises((TimeoutError, asyncio.TimeoutError)):
            await asyncio.wait_for(second.wait(), 0.05)  # "first" hangs: always times out
        assert session.history == []
        first.cancel()
        result = await session.send("third")
        assert result.success
        assert prompts(session) == ["first", "third"] and session.history[0].cancelled
        assert t.prompts == [b"first", b"third"]  # "second" never ran
        await session.aclose()

    asyncio.run(main())


@pytest.mark.parametrize("bad", [{"timeout": -1}, {"modle": "x"}, {"resume": CHAT}])
def test_send_stream_checks_every_override_at_once_on_both_faces(bad):
    t = script()
    with ConversationSession(transport=t) as sync:
        sync.send_stream("one")
        with pytest.raises((TypeError, ValueError)):
            sync.send_stream("two", **bad)
        assert sync.history == []  # nothing was finalized for a call that failed
        assert sync.send("three").success
        assert prompts(sync) == ["one", "three"]

    async def main() -> None:
        session = AsyncConversationSession(transport=script())
        session.send_stream("one")
        with pytest.raises((TypeError, ValueError)):
            session.send_stream("two", **bad)
        assert session.history == []
        assert (await session.send("three")).success
        assert prompts(session) == ["one", "three"]
        await session.aclose()

    asyncio.run(main())


def test_async_aclose_stops_every_stream_it_has_not_recorded(sim, spawned):
    async def main() -> None:
        session = AsyncConversationSession(sim("slow"))
        a = session.send_stream("Write a long story")
        async for _ in a:
            break  # A is running
        b = session.send_stream("next")  # deferred until A is recorded
        await session.aclose()
        assert a.done and a.result is not None and a.result.cancelled
        with pytest.raises(ProcessLookupError):
            os.killpg(a.pid, 0)  # A's group is gone
        assert not b.done and len(spawned) == 1  # B never ran

    asyncio.run(main())


def test_leaving_async_with_stops_the_earlier_stream(sim, spawned):
    async def main() -> None:
        async with AsyncConversationSession(sim("slow")) as session:
            a = session.send_stream("Write a long story")
            await a
            session.send_stream("next")
        assert a.done and len(spawned) == 1

    asyncio.run(main())


def test_save_records_a_stream_that_ended_without_finalize(tmp_path):
    path = tmp_path / "s.json"
    with ConversationSession(transport=script()) as session:
        stream = session.send_stream("remember 42")
        for _ in stream:
            pass
        assert session.session_id == CHAT  # the turn has ended: its chat is known
        session.save(path)
        saved = json.loads(path.read_text())
        assert saved["chat_id"] == CHAT and [h["prompt"] for h in saved["history"]] == ["remember 42"]
        assert session.finalize_stream(stream).success  # still fine, and recorded once
        assert prompts(session) == ["remember 42"]

    async def main() -> None:
        session = AsyncConversationSession(transport=script())
        stream = session.send_stream("remember 42")
        async for _ in stream:
            pass
        session.save(path)
        assert json.loads(path.read_text())["chat_id"] == CHAT
        assert session.to_dict()["history"][0]["prompt"] == "remember 42"
        await session.send("and now?")
        assert prompts(session) == ["remember 42", "and now?"]
        await session.aclose()

    asyncio.run(main())


@pytest.mark.timeout(60)
def test_save_does_not_wait_for_a_running_stream(tmp_path):
    async def main() -> None:
        session = AsyncConversationSession(transport=script(hang_on=b"first"))
        stream = session.send_stream("first")
        await stream
        session.save(tmp_path / "s.json")  # returns at once: the turn is still running
        assert json.loads((tmp_path / "s.json").read_text())["history"] == []
        await session.aclose()
        assert stream.done

    asyncio.run(main())


@pytest.mark.timeout(60)
def test_async_stream_cancelled_while_it_waits_for_the_previous_turn_never_runs():
    async def main() -> None:
        t = script(hang_on=b"first")
        session = AsyncConversationSession(transport=t)
        first = session.send_stream("first")
        second = session.send_stream("second")

        async def consume() -> None:
            async for _ in second:
                pass

        task = asyncio.ensure_future(consume())
        while not t.prompts:
            await asyncio.sleep(0)  # until "first" runs (started by second's start)
        second.cancel()
        first.cancel()
        with pytest.raises(RuntimeError, match="cancelled before it started"):
            await task
        assert t.prompts == [b"first"]  # "second" never ran
        assert (await session.send("third")).success
        assert prompts(session) == ["first", "third"]
        await session.aclose()

    asyncio.run(main())


def test_async_deferred_streams_keep_events_as_their_turn_says(tmp_path):
    """keep_events given per turn, or by load(path, client, keep_events=False) on a shared
    client, holds for a deferred stream too (its turn opened at its start), as for the first."""
    async def main() -> None:
        async with AsyncCursorAgentClient(transport=script()) as client:
            session = AsyncConversationSession(client)
            first = session.send_stream("one", keep_events=False)
            second = session.send_stream("two", keep_events=False)  # deferred
            assert (await first.wait()).success and (await second.wait()).success
            assert (len(first.events), len(second.events)) == (0, 0)
            session.save(tmp_path / "chat.json")
            loaded = AsyncConversationSession.load(tmp_path / "chat.json", client,
                                                   keep_events=False)
            third, fourth = loaded.send_stream("three"), loaded.send_stream("four")
            assert (await third.wait()).success and (await fourth.wait()).success
            assert (len(third.events), len(fourth.events)) == (0, 0)
            kept = session.send_stream("five")  # the client's own config: kept
            assert (await kept.wait()).success and len(kept.events) == len(LINES)

    asyncio.run(main())
