"""The sync client and its streams used from several threads at once.

These pin what a caller sees, whatever the client keeps inside: the first calls of one client
from many threads at once hold its loop thread once (one ``close()`` stops it); two threads
that cancel or close one stream at once stop the turn once (one SIGTERM) and get the same
result; ``close()`` from another thread while ``next()`` blocks stops the turn and ends the
iteration; a ``close()`` of an ended turn leaves its unread events to iterate; two threads
waiting for one end both get it; a Ctrl-C inside ``wait()`` loses nothing. The agent is the
in-memory script transport (no process): :class:`ScriptProcess` records the signals sent.
"""

from __future__ import annotations

import _thread
import asyncio
import signal
import threading
from collections.abc import Callable
from typing import Any

import pytest

from cursor_agent_api import AgentConfig, CursorAgentClient, EventType
from cursor_agent_api.protocol import AgentResult
from cursor_agent_api.testing import Script, ScriptTransport

CHAT = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
THREADS = 8


def _lines(n: int) -> list[dict[str, Any]]:
    return [{"type": "assistant", "session_id": CHAT,
             "message": {"role": "assistant", "content": [{"type": "text", "text": f"t{i}"}]}}
            for i in range(n)] + [{"type": "result", "subtype": "success", "result": "ok",
                                   "session_id": CHAT}]


def _config(script: Script | ScriptTransport, **fields: Any) -> AgentConfig:
    fields.setdefault("result_grace", 0.2)
    fields.setdefault("kill_grace", 0.2)
    transport = script if isinstance(script, ScriptTransport) else ScriptTransport(script)
    return AgentConfig(transport=transport, **fields)


def _texts(events: Any) -> list[str]:
    return [e.text or "" for e in events if e.type is EventType.ASSISTANT]


def _at_once(n: int, call: Callable[[], object]) -> tuple[list[object], list[BaseException]]:
    """``call()`` from ``n`` threads released together; (their values, their exceptions)."""
    ready = threading.Barrier(n)
    values: list[object] = []
    errors: list[BaseException] = []

    def one() -> None:
        ready.wait()
        try:
            values.append(call())
        except BaseException as exc:  # checked by the caller
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads)
    return values, errors


def _ended(client: CursorAgentClient, stream: Any) -> threading.Event:
    """Set once the stream's turn has ended (its done callbacks run, on the loop)."""
    ended = threading.Event()
    client._portal.loop.call_soon_threadsafe(
        stream._run.add_done_callback, lambda _: ended.set())
    return ended


def _callbacks_done(portal: Any) -> None:
    """Once this returns, every turn's done callback that has begun has ended: a turn's lets
    its reference on the loop go just after it has handed the result to the waiting caller."""
    portal.call(asyncio.sleep, 0)


@pytest.mark.timeout(120)
def test_first_calls_from_many_threads_at_once_hold_the_loop_thread_once() -> None:
    # a client holds one reference on its loop thread from its first call, made from any
    # thread, to close(): eight first calls at once take one, which one close() gives back
    for _ in range(3):
        client = CursorAgentClient(_config(Script(_lines(1))))
        results, errors = _at_once(THREADS, lambda client=client: client.query("x"))
        assert errors == [] and len(results) == THREADS
        assert all(isinstance(r, AgentResult) and r.success for r in results)
        portal = client._portal
        thread = portal._thread
        _callbacks_done(portal)
        assert thread is not None and portal._refs == 1  # the client's hold, and nothing else
        client.close()
        thread.join(30)
        assert not thread.is_alive() and portal._refs == 0
        client.close()  # idempotent
        assert client.query("y").success  # usable again: the hold is taken again
        _callbacks_done(portal)
        assert portal._refs == 1
        client.close()
        assert portal._refs == 0


@pytest.mark.timeout(120)
@pytest.mark.parametrize("stop", ["cancel", "close"])
def test_threads_stopping_one_stream_at_once_stop_the_turn_once(stop: str) -> None:
    transport = ScriptTransport(Script(_lines(1)[:1], hang=True))
    with CursorAgentClient(_config(transport)) as client:
        for k in range(5):
            stream = client.query_stream("x")
            assert _texts([next(stream)]) == ["t0"]  # the agent is running, and then hangs
            values, errors = _at_once(THREADS, getattr(stream, stop))
            assert errors == []
            result = stream.wait()
            if stop == "close":
                assert values == [None] * THREADS
            assert result.cancelled and not result.success and result.exit_code == 143
            assert stream.cancelled and stream.done and list(stream) == []
            # one SIGTERM to the agent: the turn was stopped once, not once per thread
            assert transport.turns[k].process.signals_sent == [signal.SIGTERM]


@pytest.mark.timeout(120)
def test_close_from_another_thread_while_next_blocks_stops_the_turn_and_returns() -> None:
    with CursorAgentClient(_config(Script(_lines(1)[:1], hang=True))) as client:
        for _ in range(5):  # the close lands before, inside or after the blocked next()
            stream = client.query_stream("x")
            first = threading.Event()
            seen: list[Any] = []
            errors: list[BaseException] = []

            def iterate(stream: Any = stream, first: threading.Event = first,
                        seen: list[Any] = seen, errors: list[BaseException] = errors) -> None:
                try:
                    for event in stream:  # blocks in next() after the first: the agent hangs
                        seen.append(event)
                        first.set()
                except BaseException as exc:  # checked below
                    errors.append(exc)

            consumer = threading.Thread(target=iterate)
            consumer.start()
            assert first.wait(30)
            stream.close()
            consumer.join(30)
            assert not consumer.is_alive() and errors == []
            assert _texts(seen) == ["t0"]
            assert stream.done and stream.result.cancelled and stream.cancelled
            assert stream.wait().cancelled


@pytest.mark.timeout(60)
def test_close_of_an_ended_turn_leaves_its_unread_events_to_iterate() -> None:
    with CursorAgentClient(_config(Script(_lines(50)))) as client:
        stream = client.query_stream("x")
        assert _ended(client, stream).wait(30)
        stream.close()  # the turn is over: nothing to stop
        assert stream.done and stream.result.success and not stream.cancelled
        assert _texts(list(stream)) == [f"t{i}" for i in range(50)]  # still all there, once
        assert list(stream) == []
        assert stream.wait().result == "ok"
        stream.close()  # again: the same end


@pytest.mark.timeout(60)
def test_two_threads_waiting_for_one_end_both_get_the_result() -> None:
    # the agent stays after its result until result_grace has passed: both wait for that end
    script = Script(_lines(20), hang=True)
    with CursorAgentClient(_config(script, result_grace=0.5)) as client:
        for _ in range(3):
            stream = client.query_stream("x")
            assert _texts(list(stream)) == [f"t{i}" for i in range(20)]
            results, errors = _at_once(2, lambda stream=stream: stream.wait(timeout=30))
            assert errors == [] and len(results) == 2
            assert all(r is stream.result for r in results)
            assert stream.result is not None and stream.result.result == "ok"


@pytest.mark.timeout(60)
def test_a_stream_with_every_event_handed_out_is_waited_for_beside_its_consumer() -> None:
    # Once every event is handed out there is nothing left to consume: a thread that waits for
    # the end, or asks for the next event, is no second consumer, even at the instant another
    # thread is inside next() (its one-consumer flag set for a few bytecodes: set here, as that
    # thread would have it, since a thread switch cannot be placed there on purpose).
    script = Script(_lines(5), hang=True)
    with CursorAgentClient(_config(script, result_grace=0.5)) as client:
        stream = client.query_stream("x")
        assert _texts(list(stream)) == [f"t{i}" for i in range(5)]
        stream._busy = True  # another thread inside next(), at its end too
        try:
            with pytest.raises(StopIteration):
                next(stream)
            assert stream.wait(timeout=30).result == "ok"
            assert stream.wait().result == "ok"
        finally:
            stream._busy = False


@pytest.mark.timeout(60)
def test_ctrl_c_inside_wait_then_waiting_again_gets_the_end_and_every_event_once() -> None:
    n = 300
    with CursorAgentClient(_config(Script(_lines(n), delay=0.0005))) as client:
        stream = client.query_stream("x")
        done = threading.Event()
        armed = False

        def on_sigint(_signum: int, _frame: object) -> None:
            nonlocal armed
            if armed:  # raised only inside the try below (see test_stream_interrupts.py)
                armed = False
                raise KeyboardInterrupt

        def fire() -> None:
            while not done.wait(0.003):
                _thread.interrupt_main(signal.SIGINT)

        previous = signal.signal(signal.SIGINT, on_sigint)
        firing = threading.Thread(target=fire)
        firing.start()
        interrupts = 0
        try:
            while True:
                try:
                    armed = True
                    result = stream.wait()
                    armed = False
                    break
                except KeyboardInterrupt:
                    interrupts += 1
        finally:
            armed = False
            done.set()
            firing.join()
            signal.signal(signal.SIGINT, previous)
        assert result.success and result is stream.result
        assert _texts(stream.events) == [f"t{i}" for i in range(n)]  # each once, in order
        assert list(stream) == []
        assert stream.wait() is result
