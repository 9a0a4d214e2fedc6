"""An :class:`~cursor_agent_api.AsyncStreamingResponse` starts on its first step, ``await`` or
``async with``; other tasks may hold it meanwhile. What they do while one task's ``start()``
is under way counts as if it came after it:

* a waiter parked meanwhile (``wait()``, an ``async for`` step) gets the start's error when
  the start raises, at once — never a wait for ever on a queue nothing will fill;
* a ``cancel()`` meanwhile stops the turn as soon as it has started: its result says
  cancelled (an ACP turn never sends its prompt), and no event is handed out;
* a session's next stream, settling a previous one whose start is under way and then fails,
  drops that one (it never ran) and runs.

Pinned for each turn there is: the subprocess transport's ``AgentRun`` ("print"),
``ScriptTransport``'s (the same ``AgentRun``, its process a script), and ACP's ``AcpTurn``
(the fake ``agent acp``). The start is held at the agent's spawn until the other task is
where the test wants it."""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from acp_fake import FakeAgent

from cursor_agent_api import AsyncConversationSession, AsyncCursorAgentClient
from cursor_agent_api.config import AgentConfig
from cursor_agent_api.errors import AgentStartError
from cursor_agent_api.runtime import process as process_module
from cursor_agent_api.testing import Script, ScriptTransport

KINDS = ["print", "script", "acp"]
INIT = {"type": "system", "subtype": "init", "session_id": "8b72ae6d-ab42-4854-991e-6ecf580e66c2"}
RESULT = {"type": "result", "subtype": "success", "is_error": False, "result": "hi"}
# a start that raises: no agent to spawn (print, acp) or a script that cannot play
START_ERRORS = (AgentStartError, TypeError)


def _cannot_play(prompt: bytes) -> Any:
    return None  # not a Script: TypeError out of the start


def _config(kind: str, fake: FakeAgent, *, starts: bool = True, hangs: bool = False
            ) -> AgentConfig:
    """A config whose turns run on ``kind``: they answer "hi", hang until signalled
    (``hangs``), or cannot start (``starts=False``)."""
    missing = str(fake.root / "no-such-agent")
    if kind == "script":
        play = (Script([INIT], hang=True) if hangs else Script([INIT, RESULT])) if starts \
            else _cannot_play
        return AgentConfig(transport=ScriptTransport(play))
    if kind == "print":
        agent = fake.root / "print-agent"
        tail = "exec sleep 600" if hangs else "echo '" + '{"type":"result","subtype":' \
            '"success","is_error":false,"result":"hi"}' + "'"
        agent.write_text(f"#!/bin/sh\ncat >/dev/null\n{tail}\n")
        agent.chmod(0o755)
        return AgentConfig(agent_binary=str(agent) if starts else missing,
                           workspace=str(fake.workspace), kill_grace=1.0)
    return fake.config() if starts else fake.config(agent_binary=missing)


def _at_spawn(config: AgentConfig, monkeypatch: pytest.MonkeyPatch,
              then: Callable[[], Awaitable[None]]) -> None:
    """Await ``then()`` as a turn of ``config`` spawns its agent: inside its ``start()``."""
    transport = config.transport
    if isinstance(transport, ScriptTransport):
        real_spawn = transport._spawn

        async def spawn_script(run: Any) -> Any:
            await then()
            return await real_spawn(run)

        monkeypatch.setattr(transport, "_spawn", spawn_script)
        return
    real = process_module.AgentProcess.spawn

    async def spawn(cls: Any, *args: Any, **kwargs: Any) -> Any:
        await then()
        return await real(*args, **kwargs)

    monkeypatch.setattr(process_module.AgentProcess, "spawn", classmethod(spawn))


async def _parked(queue: Any) -> None:
    """Let the loop run until a task waits on the stream's ``queue`` (a few steps)."""
    for _ in range(100):
        if queue._waiter is not None:
            return
        await asyncio.sleep(0)
    raise AssertionError("no task waits on the stream")


async def _outcome(task: asyncio.Task[Any]) -> str:
    """How ``task`` ended: the name of what it raised, or "returned"; "still waiting" if it
    has not ended once the loop ran a while after (its wait would be for ever)."""
    done, _ = await asyncio.wait({task}, timeout=10)
    if not done:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return "still waiting"
    exc = task.exception()
    return "returned" if exc is None else type(exc).__name__


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("how", ["wait", "async for"])
def test_a_waiter_parked_while_the_start_fails_gets_its_error(
        kind: str, how: str, fake: FakeAgent, monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> tuple[str, str]:
        config = _config(kind, fake, starts=False)
        go = asyncio.Event()
        _at_spawn(config, monkeypatch, go.wait)
        async with AsyncCursorAgentClient(config) as client:
            stream = client.query_stream("q")
            starter = asyncio.ensure_future(stream.start())
            await asyncio.sleep(0)  # the start has begun: it waits at the spawn
            waiter = asyncio.ensure_future(stream.wait() if how == "wait" else anext(stream))
            await _parked(stream._queue)
            go.set()
            started = await _outcome(starter)
            return started, await _outcome(waiter)

    started, waited = asyncio.run(main())
    assert started in ("AgentNotFoundError", "TypeError")
    assert waited == started  # the start's own error, not a wait for ever


@pytest.mark.parametrize("kind", KINDS)
def test_after_a_failed_start_each_step_and_wait_raise_its_error(
        kind: str, fake: FakeAgent) -> None:
    async def main() -> None:
        async with AsyncCursorAgentClient(_config(kind, fake, starts=False)) as client:
            stream = client.query_stream("q")
            with pytest.raises(START_ERRORS) as failed:
                await stream.start()
            for _ in range(2):
                with pytest.raises(type(failed.value)):
                    await anext(stream)
                with pytest.raises(type(failed.value)):
                    await stream.wait()
            await stream.aclose()  # nothing to stop

    asyncio.run(main())


@pytest.mark.parametrize("kind", KINDS)
def test_a_cancel_while_another_task_starts_the_stream_stops_the_turn(
        kind: str, fake: FakeAgent, monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> tuple[int, bool, bool, bool]:
        config = _config(kind, fake, hangs=True)
        holder: list[Any] = []

        async def cancel_it() -> None:
            holder[0].cancel()  # another task's cancel, landing while start() is awaited

        _at_spawn(config, monkeypatch, cancel_it)
        async with AsyncCursorAgentClient(config) as client:
            stream = client.query_stream("q")
            holder.append(stream)
            await stream.start()
            events = [e async for e in stream]
            result = await asyncio.wait_for(stream.wait(), 60)  # (a hung turn fails the test)
            return len(events), result.cancelled, result.success, stream.cancelled

    assert asyncio.run(main()) == (0, True, False, True)
    if kind == "acp":  # cancelled before its prompt was sent
        assert not any("session/prompt" in line for line in fake.received())


def test_a_session_stream_settling_one_whose_start_fails_drops_it_and_runs(
        fake: FakeAgent, monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> tuple[str, str, list[str], list[bytes]]:
        transport = ScriptTransport(lambda prompt: _cannot_play(prompt) if prompt == b"one"
                                    else Script([INIT, RESULT]))
        go = asyncio.Event()
        _at_spawn(AgentConfig(transport=transport), monkeypatch, go.wait)
        session = AsyncConversationSession(transport=transport)
        first = session.send_stream("one")
        starter = asyncio.ensure_future(first.start())
        await asyncio.sleep(0)  # the first start has begun: it waits at the spawn
        second = session.send_stream("two")
        runner = asyncio.ensure_future(session.finalize_stream(second))  # settles "one" first
        await _parked(first._queue)
        go.set()
        started = await _outcome(starter)
        ran = await _outcome(runner)
        await session.aclose()
        return started, ran, [t.prompt for t in session.history], transport.prompts

    started, ran, history, prompts = asyncio.run(main())
    assert (started, ran) == ("TypeError", "returned")
    assert history == ["two"] and prompts == [b"one", b"two"]  # "one" never ran: dropped


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("how", ["session.aclose", "stream.aclose", "cancel, wait"])
def test_closing_a_session_stream_whose_start_waits_for_a_turn_that_never_ends(
        kind: str, how: str, fake: FakeAgent) -> None:
    """The second stream's start (in a task iterating it) waits for the first turn, which
    never ends: closing or cancelling the second means it never starts — nothing waits for
    the first turn's end for it (session.aclose() closes the newest first, then stops the
    first)."""
    async def main() -> tuple[str, str, bool, bool]:
        session = AsyncConversationSession(_config(kind, fake, hangs=True))
        first = await session.send_stream("one").start()
        second = session.send_stream("two")

        async def consume() -> list[Any]:
            return [e async for e in second]

        consumer = asyncio.ensure_future(consume())
        await _parked(first._queue)  # the second's start settles the first: waits for its end
        if how == "cancel, wait":
            second.cancel()
        closer = asyncio.ensure_future(session.aclose() if how == "session.aclose"
                                       else second.aclose() if how == "stream.aclose"
                                       else second.wait())
        closed = await _outcome(closer)  # "still waiting": it waited for the first turn
        # session.aclose() stops every stream not yet recorded, the first one included
        closed_first = first.result is not None and first.result.cancelled
        first.cancel()
        consumed = await _outcome(consumer)
        await session.aclose()
        return closed, consumed, first.result is not None and first.result.cancelled, \
            second._spawned, closed_first

    closed, consumed, first_cancelled, second_ran, closed_first = asyncio.run(main())
    assert closed == ("RuntimeError" if how == "cancel, wait" else "returned")
    assert consumed == "RuntimeError"  # the stream was cancelled before it started
    assert first_cancelled and not second_ran
    assert closed_first == (how == "session.aclose")


def test_a_session_stream_settling_an_unstarted_one_whose_start_fails_raises_its_error(
        ) -> None:
    """Nobody else started the first stream: the second's start does, and its error is the
    second's (as a send() after it would raise it), not swallowed."""
    async def main() -> tuple[str, list[bytes]]:
        transport = ScriptTransport(lambda prompt: _cannot_play(prompt) if prompt == b"one"
                                    else Script([INIT, RESULT]))
        session = AsyncConversationSession(transport=transport)
        session.send_stream("one")
        second = session.send_stream("two")
        ran = await _outcome(asyncio.ensure_future(session.finalize_stream(second)))
        await session.aclose()
        return ran, transport.prompts

    assert asyncio.run(main()) == ("TypeError", [b"one"])  # "two" never ran


def test_a_session_stream_settling_one_cancelled_as_it_starts_drops_it_and_runs() -> None:
    """The second stream's start settles the first (recorded), then starts the middle one,
    which is cancelled (from elsewhere) while it waits for its turn to open: the middle one
    never ran, so it is dropped and the session goes on: the second runs."""
    async def main() -> tuple[str, list[bytes], list[str]]:
        transport = ScriptTransport(lambda prompt: Script([INIT, RESULT]))
        session = AsyncConversationSession(transport=transport)
        first = session.send_stream("one")
        await first.start()
        middle = session.send_stream("two")
        second = session.send_stream("three")
        opener = middle._opener
        assert opener is not None

        async def cancelled_as_it_opens() -> Any:
            middle.cancel()  # (a cancel from elsewhere, landing in the middle one's opener)
            return await opener()

        middle._opener = cancelled_as_it_opens
        ran = await _outcome(asyncio.ensure_future(session.finalize_stream(second)))
        await session.aclose()
        return ran, transport.prompts, [turn.prompt for turn in session.history]

    assert asyncio.run(main()) == ("returned", [b"one", b"three"], ["one", "three"])


@pytest.mark.parametrize("kind", KINDS)
def test_a_failed_start_raised_again_keeps_its_traceback(kind: str, fake: FakeAgent) -> None:
    """Each later step raises the start's error with the traceback it had (as an asyncio
    future does), not one growing by a frame or more each time."""
    async def main() -> list[int]:
        async with AsyncCursorAgentClient(_config(kind, fake, starts=False)) as client:
            stream = client.query_stream("q")
            with pytest.raises(START_ERRORS):
                await stream.start()
            sizes = []
            for _ in range(4):
                with pytest.raises(START_ERRORS) as failed:
                    await anext(stream)
                sizes.append(len(traceback.extract_tb(failed.value.__traceback__)))
            return sizes

    sizes = asyncio.run(main())
    assert len(set(sizes)) == 1, sizes


@pytest.mark.parametrize("kind", KINDS)
def test_a_step_cancelled_during_another_tasks_start_awaits_the_turns_end(
        kind: str, fake: FakeAgent, monkeypatch: pytest.MonkeyPatch) -> None:
    """A consumer's step, parked while another task starts the stream, is cancelled (say, a
    timeout): the turn is cancelled and its end awaited before the cancellation propagates."""
    async def main() -> tuple[bool, bool]:
        config = _config(kind, fake, hangs=True)
        go = asyncio.Event()
        _at_spawn(config, monkeypatch, go.wait)
        async with AsyncCursorAgentClient(config) as client:
            stream = client.query_stream("q")
            starter = asyncio.ensure_future(stream.start())
            await asyncio.sleep(0)  # the start has begun: it waits at the spawn
            step = asyncio.ensure_future(anext(stream))
            await _parked(stream._queue)
            step.cancel()
            go.set()
            await asyncio.wait({step}, timeout=60)  # (a hung turn fails the test)
            assert step.cancelled()
            ended = stream.result is not None  # when the step's cancellation came out
            await asyncio.gather(starter, return_exceptions=True)
            result = await asyncio.wait_for(stream.wait(), 60)  # (a hung turn fails the test)
            return ended, result.cancelled

    assert asyncio.run(main()) == (True, True)
