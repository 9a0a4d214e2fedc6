"""The sync API's loop thread (runtime/portal.py): a loop released on its own thread (the
last stream ending there) is finished before the next ``acquire()`` starts another, so that
what ran on it (an ``agent acp`` bound to that loop) is let go first, not found still running
by the next turn ("runs on another event loop, which is still running"); an owner's hold is
one reference, however many threads take it at once."""

from __future__ import annotations

import asyncio
import threading
import time

from cursor_agent_api.runtime.portal import LoopThread


def test_acquire_after_a_release_on_the_loop_s_own_thread_waits_for_that_loop_to_finish() -> None:
    portal = LoopThread()
    old = portal.acquire()

    async def slow_to_cancel() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            time.sleep(0.5)  # what a loop finishes at its end (stopping an agent) takes time
            raise

    async def start_and_release() -> None:
        asyncio.get_running_loop().create_task(slow_to_cancel())
        await asyncio.sleep(0)
        portal.release()  # the last reference, on the loop's own thread: not joined there

    portal.submit(start_and_release).result(10)
    new = portal.acquire()
    try:
        assert new is not old
        assert old.is_closed(), "the old loop was still running when the new one started"
    finally:
        portal.release()


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
