"""The async client on uvloop (what uvicorn runs the server on): same process rules."""

from __future__ import annotations

import asyncio
import os

import pytest

from cursor_agent_api import AgentTimeoutError, AsyncCursorAgentClient, EventType

uvloop = pytest.importorskip("uvloop")


def run(coro_fn):
    loop = uvloop.new_event_loop()
    try:
        return loop.run_until_complete(coro_fn())
    finally:
        loop.close()


def test_uvloop_turns(sim, spawned):
    async def main():
        ok = await AsyncCursorAgentClient(sim()).query("What is 2 + 2?")
        stubborn = await AsyncCursorAgentClient(
            sim("ignore-sigterm", result_grace=0.2, kill_grace=0.5)).query("What is 2 + 2?")
        silent = await AsyncCursorAgentClient(sim("silence", idle_timeout=1.0)).query("hi")
        async with AsyncCursorAgentClient(sim("silence")).query_stream("hi") as stream:
            async for event in stream:
                assert event.type is EventType.SYSTEM_INIT
                assert os.getpgid(stream.pid) == stream.pid
                stream.cancel()
        return ok, stubborn, silent, stream.result

    ok, stubborn, silent, cancelled = run(main)
    assert ok.success and ok.result == "4"
    assert stubborn.success and stubborn.exit_code == 137
    assert isinstance(silent.exception, AgentTimeoutError)
    assert cancelled.cancelled and cancelled.exit_code == 143
    assert len(spawned) == 4  # and the autouse fixture checks every group is gone


def test_uvloop_concurrent(sim):
    async def main():
        client = AsyncCursorAgentClient(sim())
        return await asyncio.gather(*(client.query(f"What is {i} + 1?") for i in range(8)))

    assert [r.result for r in run(main)] == [str(i + 1) for i in range(8)]
