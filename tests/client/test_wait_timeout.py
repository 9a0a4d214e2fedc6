"""``wait(timeout=…)`` honours its deadline while the agent is silent, and the stream goes on.

The agent here (the simulator's ``silence`` fault) writes ``system/init`` and then nothing
until it is signalled: a wait that drained the stream without a deadline never returned
before the turn ended. No timed assertion: the wait must raise ``TimeoutError`` (a hang
would be stopped by the test's own timeout), and the stream must still be usable.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from cursor_agent_api import AsyncCursorAgentClient, CursorAgentClient, EventType


@pytest.mark.timeout(60)
def test_sync_wait_with_a_timeout_raises_while_the_agent_is_silent(sim):
    with CursorAgentClient(sim("silence")) as client:
        stream = client.query_stream("hi")
        # each wait times out; on a loaded machine the agent may write system/init only after
        # the first one (it starts a Python process): the waits go on until one consumed it
        deadline = time.monotonic() + 30
        while not stream.events and time.monotonic() < deadline:
            with pytest.raises(TimeoutError, match=r"did not end within 0\.5 s"):
                stream.wait(timeout=0.5)
            assert not stream.done and not stream.cancelled
        # the events the wait consumed are kept, and the stream still ends as usual
        assert [e.type for e in stream.events] == [EventType.SYSTEM_INIT]
        with pytest.raises(TimeoutError):
            stream.wait(timeout=0)
        stream.cancel()
        result = stream.wait(timeout=30)
        stream.close()
    assert result.cancelled and stream.done


@pytest.mark.timeout(60)
def test_sync_iteration_goes_on_after_a_timed_out_wait(sim):
    with CursorAgentClient(sim("silence")) as client, client.query_stream("hi") as stream:
        with pytest.raises(TimeoutError):
            stream.wait(timeout=0.2)
        stream.cancel()
        rest = list(stream)  # nothing new is handed out once cancelled; no hang, no error
        assert rest == []
    assert stream.result is not None and stream.result.cancelled


@pytest.mark.timeout(60)
def test_sync_close_after_a_timed_out_wait_stops_the_agent(sim, spawned):
    with CursorAgentClient(sim("silence")) as client:
        stream = client.query_stream("hi")
        with pytest.raises(TimeoutError):
            stream.wait(timeout=0.2)
        stream.close()
    assert stream.done and stream.result.cancelled and len(spawned) == 1


@pytest.mark.timeout(60)
def test_async_wait_under_a_timeout_leaves_the_stream_closable(sim):
    async def main():
        client = AsyncCursorAgentClient(sim("silence"))
        # started first: a start slower than the wait's 0.5 s (a loaded machine) would be
        # cancelled with it, and the stream with its start
        stream = await client.query_stream("hi")
        deadline = time.monotonic() + 30  # (as above: system/init may come after the first)
        while not stream.events and time.monotonic() < deadline:
            with pytest.raises(asyncio.TimeoutError):  # (TimeoutError's alias from 3.11 on)
                await asyncio.wait_for(stream.wait(), 0.5)
            assert not stream.done
        assert [e.type for e in stream.events] == [EventType.SYSTEM_INIT]
        await stream.aclose()
        return stream

    stream = asyncio.run(main())
    assert stream.done and stream.result.cancelled


@pytest.mark.timeout(30)
def test_sync_wait_refuses_a_nan_timeout():
    from cursor_agent_api.testing import ScriptTransport

    silent = ScriptTransport([{"type": "system", "subtype": "init"}], hang=True)
    with CursorAgentClient(transport=silent) as client, client.query_stream("hi") as stream:
        with pytest.raises(ValueError, match="timeout"):
            stream.wait(timeout=float("nan"))  # never reached its deadline: it waited forever
        assert not stream.done
        stream.cancel()
        assert stream.wait(timeout=20).cancelled
