"""The sync API's loop thread (runtime/portal.py): a loop released on its own thread (the
last stream ending there) is finished before the next ``acquire()`` starts another, so that
what ran on it (an ``agent acp`` bound to that loop) is let go first, not found still running
by the next turn ("runs on another event loop, which is still running"); an owner's hold is
one reference, however many threads take it at once."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from typing import Any

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


def test_an_acquire_while_a_last_release_from_another_thread_joins_waits_for_that_loop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the last reference let go off the loop's thread: release() stops the loop and joins it
    # outside its lock; an acquire() from a third thread in that window waits for the old
    # loop's end as well, rather than start a second loop beside it
    portal = LoopThread()
    old = portal.acquire()
    old_thread = _finishes_once_joined(portal, monkeypatch)
    seen: dict[str, object] = {}

    def meanwhile() -> None:  # (release() has left its lock, and not joined yet)
        other = threading.Thread(target=lambda: seen.setdefault("loop", portal.acquire()))
        other.start()
        other.join()
        seen["old alive"] = old_thread.is_alive()

    monkeypatch.setattr(portal, "_lock", _ThenOnce(portal._lock, meanwhile))
    portal.release()  # the last reference, from this thread: not the loop's
    try:
        assert seen["loop"] is not old
        assert seen["old alive"] is False, "a new loop started while the old one was finishing"
        assert portal._refs == 1 and old.is_closed()
    finally:
        portal.release()


def test_the_stopping_loop_s_own_thread_may_use_the_portal_while_others_wait_for_it() -> None:
    # what a loop finishes at its end (a task cancelled there) may call the sync API on that
    # same thread: it cannot wait for itself, so it gets a loop of its own; an acquire() from
    # another thread meanwhile waits until the old loop and that one have both finished
    portal = LoopThread()
    portal.acquire()
    old_thread = portal._thread
    assert old_thread is not None
    seen: dict[str, object] = {}

    async def finishing() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:  # (on the stopping thread, in its loop's end)
            portal.acquire()
            seen["inner"] = portal.call(asyncio.sleep, 0, "answered")
            seen["inner thread"] = portal._thread
            portal.release()
            raise

    async def plant() -> None:
        asyncio.get_running_loop().create_task(finishing())
        await asyncio.sleep(0)

    portal.call(plant)
    _release_on_the_loop(portal)
    portal.acquire()
    try:
        inner = seen["inner thread"]
        assert seen["inner"] == "answered"
        assert isinstance(inner, threading.Thread) and inner is not old_thread
        assert not old_thread.is_alive() and not inner.is_alive()
        assert portal._thread not in (old_thread, inner) and portal._refs == 1
    finally:
        portal.release()


def test_a_loop_started_and_released_by_a_stopping_loop_may_use_the_portal_as_it_stops(
        ) -> None:
    # loop K stops; what it finishes starts loop L (on K's thread) and releases it: K joins L.
    # What L finishes uses the portal too: on L's thread, it must not wait for K (which waits
    # for L): it gets a loop of its own, and everything ends
    portal = LoopThread()
    portal.acquire()
    seen: list[str] = []

    async def finishing_l() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:  # (on L's thread, in L's end, while K joins L)
            portal.acquire()
            seen.append(portal.call(asyncio.sleep, 0, "L's end answered"))
            portal.release()
            raise

    async def finishing_k() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:  # (on K's thread, in K's end)
            portal.acquire()  # starts L
            portal.call(_plant, finishing_l)
            portal.release()  # L's last reference, on K's thread: K joins L
            seen.append("K's end released L")
            raise

    portal.call(_plant, finishing_k)
    releaser = threading.Thread(target=portal.release, daemon=True)  # K's last reference
    releaser.start()
    releaser.join(60)  # (the deadlock this pins never ends: then the test fails)
    assert not releaser.is_alive(), "the release waits for ever (L's end waits for K, K for L)"
    assert seen == ["L's end answered", "K's end released L"]
    assert portal._refs == 0 and not any(t.is_alive() for t in portal._stopping)


def test_a_loop_s_thread_waiting_for_a_stopping_loop_never_waits_for_itself(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # loop J stops; what it finishes starts loop K (on J's thread). A callback on K's thread
    # uses the portal: J still finishing, it waits for J. Meanwhile K's last reference is let
    # go from another thread (K stops too). Once J has ended, K's acquire() looks again: it is
    # itself stopping now, and must wait for no one (not join itself)
    portal = LoopThread()
    portal.acquire()
    j_thread = portal._thread
    assert j_thread is not None
    k_waits_for_j = threading.Event()
    real_join = j_thread.join

    def join(timeout: float | None = None) -> None:
        k_waits_for_j.set()
        real_join(timeout)

    monkeypatch.setattr(j_thread, "join", join)
    k_used: list[str] = []
    releasers: list[threading.Thread] = []
    released = threading.Event()

    def on_k() -> None:  # (on K's thread)
        try:
            portal.acquire()
            portal.release()
            k_used.append("used")
        except BaseException as exc:  # (what the test reports)
            k_used.append(repr(exc))

    async def finishing_j() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:  # (on J's thread, in J's end)
            k_loop = portal.acquire()  # starts K
            k_thread = portal._thread
            k_loop.call_soon_threadsafe(on_k)
            assert k_waits_for_j.wait(60)
            releaser = threading.Thread(target=portal.release, daemon=True)  # K's last one
            releasers.append(releaser)
            releaser.start()
            released.set()
            while k_thread not in portal._stopping:  # (listed, under the lock: then joined)
                time.sleep(0.001)
            raise

    portal.call(_plant, finishing_j)
    _release_on_the_loop(portal)  # J's last reference, on its thread: J stops
    assert released.wait(60)
    releasers[0].join(60)
    assert not releasers[0].is_alive(), "K never ended"
    assert k_used == ["used"], k_used
    assert portal._refs == 0 and not any(t.is_alive() for t in portal._stopping)


async def _plant(coro: Callable[[], Any]) -> None:
    """Start ``coro()`` as a task of the running loop, and let it run to its first wait."""
    asyncio.get_running_loop().create_task(coro())
    await asyncio.sleep(0)


def test_the_sync_client_at_interpreter_exit_raises_rather_than_hang() -> None:
    # a user's __del__ calling the sync client as the interpreter finalizes: no thread can
    # start any more, so the first call is the RuntimeError of a loop thread that is gone
    script = textwrap.dedent("""
        import asyncio
        import os
        from cursor_agent_api import CursorAgentClient
        from cursor_agent_api.runtime.portal import LoopThread

        class AtExit:
            def __del__(self, write=os.write, Portal=LoopThread, Client=CursorAgentClient):
                for use in (lambda: Portal().acquire(),
                            lambda: Client(agent_binary="/nonexistent").query("hi")):
                    try:
                        use()
                    except RuntimeError as exc:
                        write(1, f"RuntimeError: {exc}\\n".encode())

        asyncio.get_event_loop_policy()  # (a program that used asyncio)
        at_exit = AtExit()
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)  # (the bug: it waited for ever)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout + done.stderr
    assert all(line.startswith("RuntimeError: the sync client's event-loop thread is gone")
               for line in lines), lines


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
        self._lock, self._thread = lock, threading.current_thread()
        self._then: Callable[[], None] | None = then

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
        then = self._then
        if then is not None and threading.current_thread() is self._thread:
            self._then = None
            then()
