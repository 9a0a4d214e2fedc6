"""Ctrl-C while a sync stream waits for its next batch loses nothing, and a stream has one
consumer: a ``KeyboardInterrupt`` raised inside ``next()`` (the turn's batch taken, not yet
handed out) leaves the stream where it was, so iterating on yields every event exactly once;
two threads iterating one stream at once get a clear error, never a stream out of step."""

from __future__ import annotations

import _thread
import random
import signal
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from cursor_agent_api import AgentConfig, ConversationSession, CursorAgentClient
from cursor_agent_api.protocol import AgentEvent, EventType
from cursor_agent_api.testing import Script, ScriptTransport

CHAT = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"


def _lines(n: int) -> list[dict[str, Any]]:
    return [{"type": "assistant", "session_id": CHAT,
             "message": {"role": "assistant", "content": [{"type": "text", "text": f"t{i}"}]}}
            for i in range(n)] + [{"type": "result", "subtype": "success", "result": "ok",
                                   "session_id": CHAT}]


def _config(n: int, delay: float, **fields: Any) -> AgentConfig:
    return AgentConfig(transport=ScriptTransport(Script(_lines(n), delay=delay)), **fields)


def _texts(events: list[AgentEvent]) -> list[str]:
    return [e.text or "" for e in events if e.type is EventType.ASSISTANT]


def _absorb_pending_interrupt() -> None:
    """A fired ``interrupt_main`` not raised yet is raised here (a backward jump checks)."""
    for _ in range(3):
        try:
            for _ in range(10_000):
                pass
        except KeyboardInterrupt:
            pass


def _iterate_under_interrupts(events: Iterator[AgentEvent], fires: int,
                              seed: int) -> tuple[list[AgentEvent], int]:
    """Iterate ``events`` to the end while another thread raises Ctrl-C in this one
    (``_thread.interrupt_main``) ``fires`` times, going on after each; (events, interrupts).

    A Ctrl-C is raised only while the iteration is armed (inside the ``try`` around it): one
    landing in this harness's own handler, or between two attempts, would escape the harness
    and end the pytest worker (it did, under load). Those are dropped; each one raised is a
    ``KeyboardInterrupt`` from the same point as Python's own SIGINT handler raises it."""
    rng = random.Random(seed)
    done = threading.Event()
    armed = False

    def on_sigint(_signum: int, _frame: object) -> None:
        nonlocal armed
        if armed:
            armed = False
            raise KeyboardInterrupt

    def fire() -> None:
        for _ in range(fires):
            if done.wait(rng.uniform(0.0, 0.02)):
                return
            _thread.interrupt_main(signal.SIGINT)

    seen: list[AgentEvent] = []
    interrupts = 0
    previous = signal.signal(signal.SIGINT, on_sigint)
    firing = threading.Thread(target=fire)
    firing.start()
    try:
        while True:
            try:
                armed = True
                for event in events:
                    seen.append(event)
                armed = False
                break
            except KeyboardInterrupt:
                interrupts += 1
    finally:
        armed = False
        done.set()
        firing.join()
        signal.signal(signal.SIGINT, previous)
    return seen, interrupts


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ctrl_c_inside_next_then_iterating_on_yields_every_event_once(seed: int) -> None:
    n = 1500
    with CursorAgentClient(_config(n, 0.0002)) as client:
        stream = client.query_stream("x")
        seen, interrupts = _iterate_under_interrupts(iter(stream), 40, seed)
        result = stream.wait()
    assert interrupts > 0
    assert _texts(seen) == [f"t{i}" for i in range(n)]
    assert len(seen) == len(stream.events) and all(a is b or a.line == b.line
                                                   for a, b in zip(seen, stream.events, strict=True))
    assert result.success and result.result == "ok"


def test_ctrl_c_inside_with_changes_keeps_the_folds_in_step() -> None:
    # the same with the events' changes: the stream and its fold stay in step
    n = 800
    with CursorAgentClient(_config(n, 0.0002)) as client:
        stream = client.query_stream("x")
        pairs = stream.with_changes()
        first = next(pairs)
        seen, _ = _iterate_under_interrupts(iter(stream), 20, 7)
        assert _texts([first[0], *seen]) == [f"t{i}" for i in range(n)]
        assert stream.wait().success


def test_a_session_goes_on_after_ctrl_c_while_its_stream_was_iterated() -> None:
    session = ConversationSession(_config(600, 0.0005))
    try:
        stream = session.send_stream("first")
        timer = threading.Timer(0.05, _thread.interrupt_main)
        timer.start()
        try:
            for _ in stream:
                pass
        except KeyboardInterrupt:
            pass
        timer.join()
        _absorb_pending_interrupt()
        result = session.send("second")
        assert result.success
        assert [turn.prompt for turn in session.history] == ["first", "second"]
    finally:
        session.close()


def test_two_threads_iterating_one_stream_get_a_clear_error_and_lose_nothing() -> None:
    n = 4000
    with CursorAgentClient(_config(n, 0.0)) as client:
        for _ in range(3):
            stream = client.query_stream("x")
            got: list[list[AgentEvent]] = [[], []]
            errors: list[BaseException] = []

            def iterate(k: int, stream: Any = stream, got: list[list[AgentEvent]] = got,
                        errors: list[BaseException] = errors) -> None:
                try:
                    for event in stream:
                        got[k].append(event)
                except RuntimeError as exc:
                    errors.append(exc)

            threads = [threading.Thread(target=iterate, args=(k,)) for k in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            for error in errors:
                assert "one consumer" in str(error), error
            handed = sorted(_texts(got[0]) + _texts(got[1]), key=lambda t: int(t[1:]))
            assert handed == [f"t{i}" for i in range(n)]  # each event once, none lost
            for k in range(2):  # each thread saw its events in order
                order = [int(t[1:]) for t in _texts(got[k])]
                assert order == sorted(order)
            assert stream.wait().success


def test_a_timed_wait_beside_an_iterating_thread_gets_a_clear_error_and_loses_nothing() -> None:
    """``wait(timeout=...)`` consumes the stream too: it is one consumer, checked as
    ``next()`` is, so a thread iterating meanwhile gets the RuntimeError (or the waiter
    does), never a TypeError, IndexError or a lost end."""
    n = 3000
    with CursorAgentClient(_config(n, 0.0)) as client:
        for _ in range(4):
            stream = client.query_stream("x")
            got: list[AgentEvent] = []
            errors: list[BaseException] = []

            def wait(stream: Any = stream, errors: list[BaseException] = errors) -> None:
                try:
                    stream.wait(timeout=60)
                except BaseException as exc:  # checked below
                    errors.append(exc)

            waiter = threading.Thread(target=wait)
            waiter.start()
            try:
                for event in stream:
                    got.append(event)
            except BaseException as exc:  # checked below
                errors.append(exc)
            waiter.join()
            for error in errors:
                assert isinstance(error, RuntimeError) and "one consumer" in str(error), error
            order = [int(t[1:]) for t in _texts(got)]
            assert order == sorted(order)  # what this thread saw, in order
            result = stream.wait()  # then the end, whoever consumed the rest
            assert result.success
            assert not _texts(list(stream))
