"""The lifetime of a client's ``agent acp`` (ACP mode), against ``cursor-agent-sim acp``.

Closing a client stops its ``agent acp`` once the running turns have ended, as print mode
lets its running streams finish: so module-level ``query_stream(..., transport="acp")`` works,
and a stream returned from a ``with CursorAgentClient(...)`` block can be iterated after it.
An async client used from a second event loop (``asyncio.run`` twice) starts a new ``agent
acp`` there; the first loop's is stopped as that loop ends. No agent process outlives its
turn once the client is closed (the ``spawned`` fixture checks every group, too)."""

from __future__ import annotations

import asyncio
import gc
import threading
from typing import Any

from acp_sim_frames import validate
from acp_sim_harness import Sim

from cursor_agent_api import AsyncCursorAgentClient, CursorAgentClient, query_stream
from cursor_agent_api.runtime import groups


def _alive(spawned: list[int]) -> list[int]:
    return [pgid for pgid in spawned if groups.group_alive(pgid)]


def test_module_level_query_stream_in_acp_mode(sim: Sim, spawned: list[int]) -> None:
    config = sim.config(permission_mode="allow")
    with query_stream("say hello", config) as stream:
        events = list(stream)
    result = stream.result
    assert result is not None and result.success, result and result.error
    assert events[-1].type.value.startswith("result")
    assert spawned and not _alive(spawned)  # stopped once the turn had ended
    validate(sim.client_frames(), sim.agent_frames())


def test_module_level_query_stream_with_acp_as_keywords(sim: Sim, spawned: list[int]) -> None:
    config = sim.config()
    stream = query_stream("say hello", agent_binary=config.agent_binary, env=config.env,
                          workspace=config.workspace, trust=True, transport="acp",
                          permission_mode="allow")
    result = stream.wait()
    assert result.success, result.error
    assert not _alive(spawned)


def test_a_stream_from_a_closed_client_runs_to_its_end(sim: Sim, spawned: list[int]) -> None:
    # each update comes 0.1 s late: the stream's turn is still running when the block ends
    # (at full speed it could end first, and its agent acp with it, before the check below)
    config = sim.config(permission_mode="allow",
                        env={"CURSOR_AGENT_SIM_FAULT": "slow", "CURSOR_AGENT_SIM_DELAY": "0.1"})
    with CursorAgentClient(config) as client:
        assert client.query("warm up").success  # the agent acp runs between turns
        stream = client.query_stream("say hello")
    assert _alive(spawned)  # the stream's turn keeps it running ...
    events = list(stream)
    assert stream.result is not None and stream.result.success, stream.result
    assert events and not _alive(spawned)  # ... until it has ended
    assert validate(sim.client_frames(), sim.agent_frames())["initialize"] == 1


def test_close_while_a_stream_runs_then_use_the_client_again(sim: Sim, spawned: list[int]) -> None:
    client = CursorAgentClient(sim.config(permission_mode="allow"))
    stream = client.query_stream("say hello")
    client.close()
    assert stream.wait().success
    assert not _alive(spawned)
    again = client.query("say hello again")  # a closed client can be used again ...
    assert again.success, again.error
    client.close()  # ... and closed again
    assert not _alive(spawned)


def test_an_async_stream_outlives_the_client_block(sim: Sim, spawned: list[int]) -> None:
    config = sim.config(permission_mode="allow")

    async def main() -> tuple[Any, Any]:
        async with AsyncCursorAgentClient(config) as client:
            started = await client.query_stream("say hello")  # running when the block ends
            later = client.query_stream("say hello again")  # not started yet
        first = [e async for e in started]
        assert started.result is not None and started.result.success, started.result
        second = await later.wait()
        return first, second

    first, second = asyncio.run(main())
    assert first and second.success, second.error
    assert not _alive(spawned)


def test_an_async_acp_client_on_two_event_loops(sim: Sim, spawned: list[int]) -> None:
    client = AsyncCursorAgentClient(sim.config(permission_mode="allow"))
    first = asyncio.run(client.query("remember the code word is BLUE"))
    assert first.success, first.error
    assert not _alive(spawned)  # the first loop's agent acp stopped as that loop ended
    second = asyncio.run(client.query("what did I ask before?", resume=first.session_id))
    assert second.success, second.error
    assert "remember the code word is BLUE" in (second.result or "")  # loaded there
    assert not _alive(spawned)
    assert len(spawned) == 2
    asyncio.run(client.aclose())


def test_an_async_acp_client_on_a_loop_that_was_left_open(sim: Sim, spawned: list[int]) -> None:
    # a loop run with run_until_complete and closed without cancelling anything: the next
    # loop stops its agent acp and starts its own
    client = AsyncCursorAgentClient(sim.config(permission_mode="allow"))
    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(client.query("say hello")).success
    finally:
        loop.close()
    assert _alive(spawned)  # (nothing stopped it: that loop simply closed)
    result = asyncio.run(client.query("say hello again"))
    assert result.success, result.error
    assert not _alive(spawned)


def test_an_async_acp_client_running_on_another_loop_is_refused_clearly(
        sim: Sim, spawned: list[int]) -> None:
    # its agent acp belongs to a loop that still runs (another thread's): a turn from this
    # loop fails with a clear error and leaves that loop's process alone
    client = AsyncCursorAgentClient(sim.config(permission_mode="allow"))
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever)
    thread.start()
    try:
        assert asyncio.run_coroutine_threadsafe(client.query("say hello"), loop).result(60).success
        refused = asyncio.run(client.query("say hello again"))
        assert not refused.success
        assert "runs on another event loop" in (refused.error or "")
        again = asyncio.run_coroutine_threadsafe(client.query("and again"), loop).result(60)
        assert again.success, again.error  # untouched there
        assert len(spawned) == 1
    finally:
        asyncio.run_coroutine_threadsafe(client.aclose(), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()
    assert not _alive(spawned)


def test_a_stream_dropped_unread_after_close_stops_the_agent(sim: Sim, spawned: list[int]) -> None:
    config = sim.config(fault="slow", permission_mode="allow",
                        env={"CURSOR_AGENT_SIM_DELAY": "0.1"})
    client = CursorAgentClient(config)
    stream = client.query_stream("write a poem about the sea")
    loop_thread = client._portal._thread
    assert loop_thread is not None
    client.close()  # the turn runs on: it holds the loop thread
    assert loop_thread.is_alive() and _alive(spawned)
    del stream  # dropped unfinished: cancelled, and the agent acp stops as the turn ends
    gc.collect()
    loop_thread.join()  # the loop thread ends with the last turn, once its agent is gone
    assert not _alive(spawned)


def test_a_session_stream_deferred_across_the_client_block_does_not_keep_the_agent(
        sim: Sim, spawned: list[int]) -> None:
    """A session's second stream (its turn opened once the first has ended) made inside the
    ``async with`` block and iterated after it: its turn runs on the closed client's ``agent
    acp``, which stops with that turn (it is not kept as if the client were in use again)."""
    from cursor_agent_api import AsyncConversationSession

    async def main() -> list[int]:
        async with AsyncCursorAgentClient(sim.config(permission_mode="allow")) as client:
            session = AsyncConversationSession(client)
            first = await session.send_stream("say hello").start()
            second = session.send_stream("say hello again")  # deferred: opened at its start
        assert [e async for e in first] and first.result is not None and first.result.success
        assert [e async for e in second] and second.result is not None
        assert second.result.success, second.result.error
        assert second.result.session_id == first.result.session_id
        return _alive(spawned)  # the loop still runs: nothing stops the agent but the client

    assert asyncio.run(main()) == []


def test_a_session_stream_made_after_close_keeps_the_agent_between_turns(
        sim: Sim, spawned: list[int]) -> None:
    """A session stream made after ``aclose()`` uses the client again: its ``agent acp`` is
    kept between turns, as for any call after close, until the next ``aclose()``."""
    from cursor_agent_api import AsyncConversationSession

    async def main() -> tuple[list[int], list[int]]:
        client = AsyncCursorAgentClient(sim.config(permission_mode="allow"))
        assert (await client.query("warm up")).success
        await client.aclose()
        session = AsyncConversationSession(client)
        first = session.send_stream("say hello")
        second = session.send_stream("say hello again")  # deferred, made after the close
        assert (await first.wait()).success and (await second.wait()).success
        kept = _alive(spawned)
        await client.aclose()
        return kept, _alive(spawned)

    kept, after = asyncio.run(main())
    assert kept and after == []


def test_an_async_acp_client_dropped_without_aclose_stops_its_agent(
        sim: Sim, spawned: list[int]) -> None:
    """As the sync client's ``__del__`` closes it: the ``agent acp`` of a dropped async client
    stops then (on its loop), not only when the loop ends."""
    import weakref

    from cursor_agent_api import client as client_module

    async def main() -> tuple[bool, list[int]]:
        client = AsyncCursorAgentClient(sim.config(permission_mode="allow"))
        assert (await client.query("say hello")).success
        dropped = weakref.ref(client)
        del client
        gc.collect()
        await asyncio.gather(*getattr(client_module, "_LETTING_GO", ()))
        return dropped() is None, _alive(spawned)

    collected, alive = asyncio.run(main())
    assert collected and spawned
    assert alive == []  # (the process ran on until asyncio.run ended)
