"""A cancel of the task that consumes an async stream ends the turn (review of a bot, F1).

A bot bounds each reply with ``asyncio.timeout`` (or ``wait_for``, a ``TaskGroup``, a
``/stop`` that cancels its task) and keeps the stream object (to offer a ``/stop``). Such a
cancel, landing while the stream waits for the next event, ends the stream as it would end
an async generator, ``async with`` or not: the turn is cancelled and its end awaited before
the cancellation propagates; its result is cancelled and iterating on ends at once. In a
session the turn is recorded cancelled, the chat id kept, and the next turn does not wait
for it. ``wait()`` stays a waiter (tests/client/test_wait_timeout.py): a session that waits
for an earlier turn on behalf of the next one does not cancel it when the next is cancelled.

Each turn here hangs after its first event until it is signalled (a script), so the old
behaviour (the turn going on) shows as a stream that has not ended once the cancel is out.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from cursor_agent_api import AsyncConversationSession, AsyncCursorAgentClient
from cursor_agent_api.client import AsyncStreamingResponse
from cursor_agent_api.testing import Script, ScriptTransport

CHAT = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
LINES = [{"type": "system", "subtype": "init", "session_id": CHAT},
         {"type": "result", "subtype": "success", "result": "ok", "session_id": CHAT}]


def script() -> ScriptTransport:
    """Every turn answers "ok" in chat CHAT, but a prompt "hang": it starts the chat, then
    stays silent and alive until it is signalled."""
    return ScriptTransport(lambda prompt: Script(LINES[:1], hang=True) if prompt == b"hang"
                           else Script(LINES))


async def _iterate(stream: AsyncStreamingResponse, got: asyncio.Event) -> None:
    async for _ in stream:
        got.set()  # then it waits for the next event, which does not come


async def _by_task_cancel(stream: AsyncStreamingResponse) -> None:
    got = asyncio.Event()
    task = asyncio.create_task(_iterate(stream, got))
    await got.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def _by_timeout(stream: AsyncStreamingResponse) -> None:
    got = asyncio.Event()
    loop = asyncio.get_running_loop()

    async def expire() -> None:
        await got.wait()
        scope.reschedule(loop.time())  # the deadline passes as the stream waits

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(None) as scope:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(expire())
                await _iterate(stream, got)


async def _by_task_group_sibling(stream: AsyncStreamingResponse) -> None:
    got = asyncio.Event()

    async def fail() -> None:
        await got.wait()
        raise RuntimeError("a sibling failed")

    with pytest.raises(Exception) as raised:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(_iterate(stream, got))
            tg.create_task(fail())
    assert type(raised.value).__name__ == "ExceptionGroup"


CANCELS: dict[str, Callable[[AsyncStreamingResponse], Awaitable[None]]] = {
    "task.cancel": _by_task_cancel, "timeout": _by_timeout,
    "task group": _by_task_group_sibling}
_NEW_IN_311 = pytest.mark.skipif(sys.version_info < (3, 11),
                                 reason="asyncio.timeout and TaskGroup are new in Python 3.11")


@pytest.mark.parametrize("cancel", [pytest.param(name, marks=_NEW_IN_311)
                                    if name in ("timeout", "task group") else name
                                    for name in CANCELS])
def test_a_cancelled_consumer_cancels_the_turn_of_a_stream_it_still_holds(cancel: str) -> None:
    async def main() -> None:
        async with AsyncCursorAgentClient(transport=script()) as client:
            stream = client.query_stream("hang")  # held by the bot, no `async with`
            await CANCELS[cancel](stream)
            assert stream.done, "the turn went on after its consumer was cancelled"
            result = stream.result
            assert result is not None and result.cancelled and not result.success
            assert [e async for e in stream] == []  # iterating on ends at once
            assert (await stream.wait()) is result
            assert (await client.query("next")).result == "ok"

    asyncio.run(main())


def test_a_session_records_the_cancelled_turn_and_the_next_does_not_wait() -> None:
    async def main() -> None:
        t = script()
        async with AsyncConversationSession(transport=t) as session:
            assert (await session.send("first")).success
            stream = session.send_stream("hang")
            await _by_task_cancel(stream)
            assert stream.done, "the turn went on after its consumer was cancelled"
            assert session.session_id == CHAT  # the chat is kept
            assert [(h.prompt, h.success, h.cancelled) for h in session.history] == \
                [("first", True, False), ("hang", False, True)]
            assert (await session.send("next")).success
            assert [h.prompt for h in session.history] == ["first", "hang", "next"]
            assert t.prompts == [b"first", b"hang", b"next"]

    asyncio.run(main())


def test_a_cancelled_next_turn_leaves_the_turn_it_waited_for_running() -> None:
    async def main() -> None:
        t = script()
        async with AsyncConversationSession(transport=t) as session:
            earlier = session.send_stream("hang")
            await anext(earlier)
            send: asyncio.Task[Any] = asyncio.create_task(session.send("next"))
            while earlier._queue._waiter is None:  # the send settles `earlier` first
                await asyncio.sleep(0)
            send.cancel()
            with pytest.raises(asyncio.CancelledError):
                await send
            assert not earlier.done  # the cancel was the next turn's: the earlier one goes on
            earlier.cancel()
            assert (await session.finalize_stream(earlier)).cancelled
            assert t.prompts == [b"hang"]

    asyncio.run(main())
