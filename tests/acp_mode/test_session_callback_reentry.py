"""A steering callback that ``send()``s on the session whose turn asked it (review 56): the
turn waits for the callback, which waited for the turn (the session's turns run in call
order) — a silent deadlock for ever, on both faces (``permission_timeout`` is ``None`` by
default). Now the inner ``send()``/``send_stream()`` raises a :class:`SessionError` at once;
the callback's failure is then a failure as any (here caught: the tool is allowed). A
callback sending on another session still runs its turn."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from typing import Any

import pytest
from acp_fake import FakeAgent

from cursor_agent_api import AsyncConversationSession, ConversationSession
from cursor_agent_api.errors import SessionError
from cursor_agent_api.permissions import Allow

_HUNG = 90.0  # a turn of the fake agent takes well under a second


def _kill_agents(session: Any) -> None:
    for transport in session.client._acp.transports.values():
        if transport.pid:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(transport.pid, signal.SIGKILL)


def _sync_send(fake: FakeAgent, other: bool) -> tuple[list[object], list[Any]]:
    inner: list[object] = []
    sessions: list[ConversationSession] = []

    def can_use_tool(request: Any) -> Allow:
        try:
            inner.append(sessions[-1].send("say nested"))
        except Exception as exc:
            inner.append(exc)
        return Allow()

    config = fake.config(can_use_tool=can_use_tool, timeout=120.0)
    with ConversationSession(config) as session, ConversationSession(fake.config()) as second:
        sessions += [second, session] if not other else [session, second]
        outer: list[Any] = []
        thread = threading.Thread(target=lambda: outer.append(session.send("run ls")),
                                  daemon=True)
        thread.start()
        thread.join(_HUNG)
        if thread.is_alive():
            _kill_agents(session)
            _kill_agents(second)
            thread.join(_HUNG)
            raise AssertionError(f"send() and its callback's send() deadlocked: {inner}")
    return inner, outer


def test_a_sync_callback_sending_on_its_own_session_fails_at_once(fake: FakeAgent) -> None:
    inner, outer = _sync_send(fake, other=False)
    assert len(inner) == 1 and isinstance(inner[0], SessionError), inner
    assert "its own session" in str(inner[0])
    assert outer[0].success, outer[0].error
    assert "I ran ls." in outer[0].result


def test_a_sync_callback_sending_on_another_session_runs_its_turn(fake: FakeAgent) -> None:
    inner, outer = _sync_send(fake, other=True)
    assert len(inner) == 1 and getattr(inner[0], "success", None), inner
    assert outer[0].success, outer[0].error


@pytest.mark.parametrize("queued", [False, True])
def test_an_async_callback_sending_on_its_own_session_fails_at_once(
        fake: FakeAgent, queued: bool) -> None:
    inner: list[object] = []
    sessions: list[AsyncConversationSession] = []

    async def can_use_tool(request: Any) -> Allow:
        for call in (lambda: sessions[0].send("say nested"),
                     lambda: sessions[0].send_stream("say nested").wait()):
            try:
                inner.append(await call())
            except Exception as exc:
                inner.append(exc)
        return Allow()

    async def main() -> Any:
        config = fake.config(can_use_tool=can_use_tool, timeout=120.0)
        async with AsyncConversationSession(config) as session:
            sessions.append(session)
            if queued:  # the turn is a deferred one, opened once this stream has ended
                session.send_stream("say first")
            try:
                return await asyncio.wait_for(session.send("run ls"), _HUNG)
            except TimeoutError:
                _kill_agents(session)
                raise

    outer = asyncio.run(main())
    assert len(inner) == 2 and all(isinstance(e, SessionError) for e in inner), inner
    assert outer.success, outer.error
    assert "I ran ls." in outer.result


def test_a_task_a_callback_starts_may_send_on_the_session_once_its_turn_ended(
        fake: FakeAgent) -> None:
    """Review 59: a callback that leaves a follow-up ``send()`` to a task of its own (not
    awaited: it queues behind the turn, no deadlock) is not refused: only a send while the
    turn waits on a callback is. Before, the task kept the callback's mark for ever."""
    later: list[asyncio.Task[Any]] = []
    sessions: list[AsyncConversationSession] = []

    async def can_use_tool(request: Any) -> Allow:
        async def follow_up() -> Any:
            while len(sessions[0].history) < 1:  # after the turn that asked has ended
                await asyncio.sleep(0.05)
            return await sessions[0].send("say follow-up")
        later.append(asyncio.get_running_loop().create_task(follow_up()))
        return Allow()

    async def main() -> Any:
        async with AsyncConversationSession(fake.config(can_use_tool=can_use_tool,
                                                        timeout=60.0)) as session:
            sessions.append(session)
            first = await session.send("run ls")
            assert first.success, first.error
            return await asyncio.wait_for(later[0], 60)

    second = asyncio.run(main())
    assert second.success, second.error
    assert "follow-up" in second.result
