"""The sync API's loop thread (runtime/portal.py): a loop released on its own thread (the
last stream ending there) is finished before the next ``acquire()`` starts another, so that
what ran on it (an ``agent acp`` bound to that loop) is let go first, not found still running
by the next turn ("runs on another event loop, which is still running"); an owner's hold is
one reference, however many threads take it at once."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pytest

from cursor_agent_api.runtime.portal import LoopThread


def test_acquire_after_a_release_on_the_loop_s_own_thread_waits_for_that_loop_to_finish(
        monkeypatch: pytest.MonkeyPatch) -> None:
    portal = LoopThread()
    old = portal.acquire()
    old_thread = _finishes_once_joined(portal, monkeypatch)
    _release_on_the_loop(portal)  # the last reference, on the loop's own thread: not joined there
    new = portal.acquire()
    try:
        assert new is not old
        assert old.is_closed(), "the old loop was still running when the new one started"
    finally:
        portal.release()
        old_thread.join()


def test_a_last_release_on_the_loop_s_thread_while_acquire_looks_leaves_one_loop_running(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # acquire() finds the loop running; before it takes its reference, the last one is let go
    # on the loop's own thread (a stream ending there): that loop still finishes when
    # acquire() goes on, so acquire() must take a reference on it in the same look (or wait
    # for its end), not start a second loop beside it
    portal = LoopThread()
    old = portal.acquire()  # the reference let go on the loop's thread in the window
    old_thread = _finishes_once_joined(portal, monkeypatch)
    monkeypatch.setattr(portal, "_lock", _ThenOnce(portal._lock, lambda: _release_on_the_loop(portal)))
    new = portal.acquire()
    try:
        assert new is old or not old_thread.is_alive(), \
            "a new loop started while the old one was still finishing"
    finally:
        portal.release()
        old_thread.join()


def test_acquire_waits_for_every_loop_released_on_its_own_thread_while_it_waited(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # acquire() waits for the first loop to finish; meanwhile another acquire() starts a
    # second loop, whose last reference is let go on its own thread: acquire() looks again
    # and waits for that one too before it starts the third
    portal = LoopThread()
    portal.acquire()
    seconds: list[threading.Thread] = []

    def meanwhile() -> None:  # (on the waiting thread, once the first loop has finished)
        portal.acquire()
        seconds.append(_finishes_once_joined(portal, monkeypatch))
        _release_on_the_loop(portal)

    first = _finishes_once_joined(portal, monkeypatch, after_join=meanwhile)
    _release_on_the_loop(portal)
    portal.acquire()
    try:
        assert len(seconds) == 1 and not first.is_alive()
        assert not seconds[0].is_alive(), "a new loop started while the last one was finishing"
    finally:
        portal.release()
        for thread in seconds:
            thread.join()


def test_an_owner_s_hold_taken_from_many_threads_at_once_is_one_reference() -> None:
    # the sync client holds its loop from its first call, made from any thread, to close():
    # eight first calls at once take one reference, which one let_go() and release() give back
    portal = LoopThread()
    ready = threading.Barrier(8)
    loops: list[asyncio.AbstractEventLoop] = []

    def first_call() -> None:
        ready.wait()
        loops.append(portal.hold())

    threads = [threading.Thread(target=first_call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(loops) == 8 and all(loop is loops[0] for loop in loops)
    assert portal._refs == 1
    assert portal.let_go() and not portal.let_go()
    portal.release()  # the one reference: the loop stops
    assert loops[0].is_closed() and portal._refs == 0
    assert portal.hold() is not loops[0]  # and a new hold starts it again
    assert portal.let_go()
    portal.release()


def _finishes_once_joined(portal: LoopThread, monkeypatch: pytest.MonkeyPatch, *,
                          after_join: Callable[[], None] | None = None) -> threading.Thread:
    """The portal's running loop thread, made to finish only once someone joins it: a task of
    its loop, cancelled at the loop's end, waits until that thread's ``join()`` is called (as
    stopping an ``agent acp`` takes time). So a loop that nobody waited for is still alive.
    ``after_join``: run once by the first ``join()``, when the thread has ended."""
    thread = portal._thread
    assert thread is not None
    joined = threading.Event()
    real_join = thread.join

    def join(timeout: float | None = None) -> None:
        nonlocal after_join
        joined.set()
        real_join(timeout)
        then, after_join = after_join, None
        if then is not None:
            then()

    monkeypatch.setattr(thread, "join", join)

    async def finishing() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            joined.wait()  # (blocks the loop's end, on its thread)
            raise

    async def plant() -> None:
        asyncio.get_running_loop().create_task(finishing())
        await asyncio.sleep(0)  # (it runs to its wait)

    portal.call(plant)
    return thread


def _release_on_the_loop(portal: LoopThread) -> None:
    """``portal.release()`` on the loop's own thread (the last stream ending there)."""
    released = threading.Event()

    def release() -> None:
        portal.release()
        released.set()

    portal.loop.call_soon_threadsafe(release)
    released.wait()


class _ThenOnce:
    """A lock that runs ``then()`` when the thread that made it first leaves it: a window
    between what a locked section saw and what that thread does next."""

    def __init__(self, lock: threading.Lock, then: Callable[[], None]) -> None:
        self._lock, self._then, self._thread = lock, then, threading.current_thread()

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
        then = self._then
        if then is not None and threading.current_thread() is self._thread:
            self._then = None
            then()
