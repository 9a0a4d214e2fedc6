"""The sync API's loop thread (runtime/portal.py): a loop released on its own thread (the
last stream ending there) is finished before the next ``acquire()`` starts another, so that
what ran on it (an ``agent acp`` bound to that loop) is let go first, not found still running
by the next turn ("runs on another event loop, which is still running")."""

from __future__ import annotations

import asyncio
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
