"""A turn cancelled while its agent ignores ``session/cancel`` (audit 17, finding 2): cancel's
fallback stops the process ``kill_grace`` later, so the next turn — a new session too — must
not be given to it: it starts on a new ``agent acp`` and succeeds. A process the client stops
itself is never said to be a broken binary.

The fake agent ignores ``session/cancel`` (``FAKE_ACP_NO_CANCEL=1``): it does not depend on the
simulator."""

from __future__ import annotations

import asyncio
import gc
import sys
from typing import Any

import pytest
from acp_fake import FakeAgent

from cursor_agent_api import AsyncCursorAgentClient, CursorAgentClient, EventType
from cursor_agent_api.runtime.acp_connection import AcpConnection

# long enough that the next query reaches the process before cancel's fallback stops it
_GRACE = 5.0


def _pids(client: Any) -> list[int | None]:
    return [t.pid for t in client._acp.transports.values() if not t.closed]


@pytest.mark.parametrize("how", ["cancel", "drop"])
def test_the_next_query_after_an_ignored_cancel_starts_a_new_process(
        fake: FakeAgent, how: str) -> None:
    config = fake.config(env={"FAKE_ACP_NO_CANCEL": "1"}, kill_grace=_GRACE, timeout=120.0)
    with CursorAgentClient(config) as client:
        assert client.query("say hello").success
        (pid,) = _pids(client)
        stream = client.query_stream("slow")
        for event in stream:
            if event.type is EventType.ASSISTANT_DELTA:
                break
        if how == "cancel":
            stream.cancel()
        else:
            del stream, event
            gc.collect()
        after = client.query("say again")
        (new_pid,) = _pids(client)
    assert after.success, after.error
    assert new_pid != pid


def test_the_async_next_query_after_an_ignored_cancel_starts_a_new_process(
        fake: FakeAgent) -> None:
    config = fake.config(env={"FAKE_ACP_NO_CANCEL": "1"}, kill_grace=_GRACE, timeout=120.0)

    async def main() -> tuple[Any, Any, int | None, int | None]:
        async with AsyncCursorAgentClient(config) as client:
            await client.query("say hello")
            (pid,) = _pids(client)
            stream = client.query_stream("slow")
            async for event in stream:
                if event.type is EventType.ASSISTANT_DELTA:
                    break
            stream.cancel()
            after = await client.query("say again")
            (new_pid,) = _pids(client)  # the process the next query ran on
            cancelled = await stream.wait()
            return cancelled, after, pid, new_pid

    cancelled, after, pid, new_pid = asyncio.run(main())
    assert cancelled.cancelled
    assert after.success, after.error
    assert new_pid != pid


def test_a_process_the_client_stops_is_not_called_a_broken_binary() -> None:
    async def main() -> BaseException:
        conn = AcpConnection([sys.executable, "-c", "import time; time.sleep(60)"], env=None,
                             kill_grace=5.0)
        await conn.start()
        pending = asyncio.ensure_future(conn.request("session/new", {}))
        await asyncio.sleep(0)
        await conn.close()
        try:
            await pending
        except BaseException as exc:
            return exc
        raise AssertionError("answered")

    error: Any = asyncio.run(main())
    assert "stopped by the client" in str(error), error
    assert error.remedy == "send the prompt again" and "check that" not in str(error)


def test_a_cancel_racing_the_end_of_a_turn_condemns_nothing(fake: FakeAgent) -> None:
    """A ``SIGKILL`` cancel landing after the turn ended (pardoned) but before its result was
    set (here: a closed client's process stopping with its last turn, an agent slow to stop)
    once condemned the process for ever: every later turn waited for it (review 56)."""
    import signal

    from acp_fake import FAKE
    fake.binary.write_text(f"#!/bin/sh\ntrap '' TERM\nexec {sys.executable} {FAKE} \"$@\"\n")
    config = fake.config(kill_grace=3.0, timeout=120.0)

    async def main() -> tuple[Any, Any, int]:
        client = AsyncCursorAgentClient(config)
        try:
            stream = client.query_stream("say hello")
            await stream.start()
            turn: Any = stream._run  # type: ignore[attr-defined]
            transport = turn.transport
            await client.aclose()  # retired: the process stops as the running turn ends
            for _ in range(60_000):  # the turn has ended (pardoned), its process stopping
                if turn not in transport._turns:
                    break
                await asyncio.sleep(0.002)
            assert turn.result is None  # (the window: the stop takes kill_grace)
            stream.cancel(signal.SIGKILL)  # a user's cancel racing the end
            first = await stream.wait()
            condemned = len(transport._condemned)
            after = await asyncio.wait_for(client.query("say again"), 45)
            return first, after, condemned
        finally:
            await client.aclose()

    first, after, condemned = asyncio.run(main())
    assert first.success, first.error
    assert condemned == 0
    assert after.success, after.error


def test_a_session_opened_on_a_process_a_cancel_then_stops_is_loaded_on_the_new_one(
        fake: FakeAgent) -> None:
    """Turn B's ``session/new`` answered, then turn A is cancelled (its agent ignoring it): B
    waits for A's fallback to stop the process before its prompt, and then prompted the new
    process for a session it never loaded ("Session not loaded", review 56). Now the session
    is ``session/load``ed on the new process first and B succeeds there."""
    config = fake.config(env={"FAKE_ACP_NO_CANCEL": "1"}, kill_grace=1.0, timeout=120.0)

    async def main() -> tuple[Any, Any, int | None, int | None]:
        async with AsyncCursorAgentClient(config) as client:
            assert (await client.query("say hello")).success
            (pid,) = _pids(client)
            a = client.query_stream("slow")
            async for event in a:
                if event.type is EventType.ASSISTANT_DELTA:
                    break
            transport: Any = a._run.transport  # type: ignore[attr-defined]
            original = transport.open_session

            async def open_session(cfg: Any, turn: Any, notes: Any) -> str:
                sid: str = await original(cfg, turn, notes)
                if turn is not a._run:  # type: ignore[attr-defined]
                    a.cancel()  # lands as B's session/new has just been answered
                return sid

            transport.open_session = open_session
            b = await client.query("say again")
            (new_pid,) = _pids(client)
            ra = await a.wait()
            return ra, b, pid, new_pid

    ra, b, pid, new_pid = asyncio.run(main())
    assert ra.cancelled
    assert b.success, b.error
    assert new_pid != pid


def test_a_session_reloaded_on_the_new_process_keeps_its_history_out_of_the_turn(
        fake: FakeAgent) -> None:
    """Review 59: turn B resumes a chat with history; its session was opened on the process a
    cancelled turn's fallback then stopped, so B loads it again on the new one. The agent's
    replay of the chat (``session/load``'s updates) is history, not B's: before, B's result
    began with the replayed text ("(replayed)")."""
    config = fake.config(env={"FAKE_ACP_NO_CANCEL": "1"}, kill_grace=1.0, timeout=120.0)

    async def main() -> Any:
        async with AsyncCursorAgentClient(config) as client:
            first = await client.query("say hello")
            assert first.success, first.error
            chat = first.session_id
            a = client.query_stream("slow")  # another session's turn, its cancel ignored
            async for event in a:
                if event.type is EventType.ASSISTANT_DELTA:
                    break
            transport: Any = a._run.transport  # type: ignore[attr-defined]
            original = transport.open_session

            async def open_session(cfg: Any, turn: Any, notes: Any) -> str:
                sid: str = await original(cfg, turn, notes)
                if turn is not a._run and cfg.resume == chat:  # type: ignore[attr-defined]
                    a.cancel()  # B's session is open on the process A's fallback stops
                return sid

            transport.open_session = open_session
            b = await client.query("say again", resume=chat)
            await a.wait()
            return b

    b = asyncio.run(main())
    assert b.success, b.error
    assert b.result == "again ", b.result
