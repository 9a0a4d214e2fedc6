"""Hand-off of events from a running turn to whoever iterates it, with back-pressure.

What lives here: :class:`AsyncEventQueue` (consumer on the same event loop)
and :class:`ThreadEventQueue` (consumer on another thread: the sync API). The
run puts each batch of events as soon as a chunk of output completes them —
nothing waits to fill a batch — and pauses reading stdout while more than
``high_water`` events wait to be consumed, so memory stays flat even with a
slow consumer. What does not: the run itself (:mod:`.run`).

Example:
    >>> q = ThreadEventQueue(high_water=2, low_water=1)
    >>> q.put(["e1", "e2"]); q.close()
    >>> q.full, q.get(), q.get() is END
    (True, ['e1', 'e2'], True)
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from .portal import WAKE_STEP

__all__ = ["END", "STOPPED", "AsyncEventQueue", "EventSink", "HeldEventQueue", "ThreadEventQueue"]

END: Final = object()
"""Returned by ``get`` once the run has ended and every batch was taken."""

STOPPED: Final = object()
"""Returned by ``get`` once the consumer called ``stop`` (cancel, close)."""

DEFAULT_HIGH_WATER = 8192
DEFAULT_LOW_WATER = 1024


class EventSink:
    """What a run writes to (on the loop's thread): the base of both queues.

    ``put`` a batch, ``close`` at the end; ``full`` says the consumer is behind;
    ``pause(on_drain)`` arms a callback run on the loop once it has caught up
    (returns False when it already has).

    Example:
        >>> sink: EventSink = ThreadEventQueue(high_water=1, low_water=1)
        >>> sink.put(["event"]); sink.full
        True
    """

    def __init__(self, high_water: int, low_water: int) -> None:
        self.high_water = high_water
        self.low_water = low_water
        self._pending = 0
        self._paused_cb: Callable[[], None] | None = None
        self._stopped = False
        self._lock = threading.Lock()

    @property
    def full(self) -> bool:
        """True while ``high_water`` or more events wait to be consumed."""
        return self._pending >= self.high_water and not self._stopped

    @property
    def stopped(self) -> bool:
        """True once the consumer has gone (``stop`` was called)."""
        return self._stopped

    def pause(self, on_drain: Callable[[], None]) -> bool:
        """Arm ``on_drain`` for when the backlog falls under ``low_water``; False if it has."""
        with self._lock:
            if self._stopped or self._pending < self.low_water:
                return False
            self._paused_cb = on_drain
            return True

    def _took(self, n: int) -> Callable[[], None] | None:
        with self._lock:
            self._pending -= n
            cb = self._paused_cb
            if cb is not None and self._pending < self.low_water:
                self._paused_cb = None
                return cb
            return None

    def _stop(self) -> Callable[[], None] | None:
        with self._lock:
            self._stopped = True
            cb, self._paused_cb = self._paused_cb, None
            return cb

    def put(self, batch: list[Any]) -> None:  # pragma: no cover - abstract
        """Hand over a batch of events."""
        raise NotImplementedError

    def close(self) -> None:  # pragma: no cover - abstract
        """The run has ended: no more batches."""
        raise NotImplementedError


class ThreadEventQueue(EventSink):
    """Batches from the loop's thread to a consumer thread (the sync ``StreamingResponse``).

    Example:
        >>> q = ThreadEventQueue()
        >>> q.stop(); q.get() is STOPPED
        True
    """

    def __init__(
        self, high_water: int = DEFAULT_HIGH_WATER, low_water: int = DEFAULT_LOW_WATER
    ) -> None:
        super().__init__(high_water, low_water)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._q: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop the run lives on (where the drain callback is called)."""
        self._loop = loop

    def put(self, batch: list[Any]) -> None:
        """Hand over a batch (dropped once the consumer stopped)."""
        if self._stopped:
            return
        with self._lock:
            self._pending += len(batch)
        self._q.put(batch)

    def close(self) -> None:
        """No more batches: ``get`` returns :data:`END` after the last one."""
        self._q.put(END)

    def get(self, timeout: float | None = None) -> Any:
        """Next batch (a list), :data:`END` or :data:`STOPPED`; blocks, at most ``timeout``
        seconds if given (``TimeoutError`` then, and nothing is taken).

        It wakes every :data:`WAKE_STEP` s, so that a Ctrl-C the kernel gave to another
        thread is raised here (see :func:`.portal.wait_for`).

        Example:
            >>> ThreadEventQueue().get(timeout=0)
            Traceback (most recent call last):
            ...
            TimeoutError: no batch within 0 s
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = WAKE_STEP if deadline is None \
                else min(WAKE_STEP, max(deadline - time.monotonic(), 0.0))
            try:
                item = self._q.get(timeout=step) if step > 0 else self._q.get_nowait()
                break
            except queue.Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError(f"no batch within {timeout:g} s") from None
        if type(item) is list:
            cb = self._took(len(item))
            if cb is not None:
                self._call_on_loop(cb)
        return item

    def stop(self) -> None:
        """The consumer has gone: wake a blocked ``get`` and drop later batches."""
        cb = self._stop()
        self._q.put(STOPPED)
        if cb is not None:
            self._call_on_loop(cb)

    def _call_on_loop(self, cb: Callable[[], None]) -> None:
        if self._loop is None:
            cb()
            return
        with contextlib.suppress(RuntimeError):  # a closed loop: nothing left to resume
            self._loop.call_soon_threadsafe(cb)


class AsyncEventQueue(EventSink):
    """Batches to a consumer on the same event loop (the async ``AsyncStreamingResponse``).

    Example:
        >>> async def main():
        ...     q = AsyncEventQueue()
        ...     q.put([1]); q.close()
        ...     return await q.get(), (await q.get()) is END
        >>> asyncio.run(main())
        ([1], True)
    """

    def __init__(
        self, high_water: int = DEFAULT_HIGH_WATER, low_water: int = DEFAULT_LOW_WATER
    ) -> None:
        super().__init__(high_water, low_water)
        self._items: collections.deque[Any] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None

    def _wake(self) -> None:
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def put(self, batch: list[Any]) -> None:
        """Hand over a batch (dropped once the consumer stopped)."""
        if self._stopped:
            return
        self._pending += len(batch)
        self._items.append(batch)
        self._wake()

    def close(self) -> None:
        """No more batches."""
        self._items.append(END)
        self._wake()

    async def get(self) -> Any:
        """Next batch, :data:`END` or :data:`STOPPED`."""
        while not self._items:
            if self._stopped:
                return STOPPED
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        item = self._items.popleft()
        if type(item) is list:
            cb = self._took(len(item))
            if cb is not None:
                cb()
        return item

    def stop(self) -> None:
        """The consumer has gone: wake a waiting ``get`` and drop later batches."""
        cb = self._stop()
        self._items.clear()
        self._wake()
        if cb is not None:
            cb()


class HeldEventQueue(AsyncEventQueue):
    r"""An :class:`AsyncEventQueue` whose events are weighed by their line's size and count
    against the read-ahead until the consumer :meth:`release`\ s them (the server: once stored).

    The turn stops reading stdout while ``high_water`` units are held; an event weighs one
    unit per started 4 KiB of its line, so the read-ahead is a few MiB, not eight 30 MB
    lines. With ``eager`` set, events are released as they are taken.

    Example:
        >>> class Line:
        ...     line = b"x" * 20000
        >>> q = HeldEventQueue(high_water=4, low_water=1)
        >>> q.put([Line()]); q.full
        True
        >>> q._took(1); q.full, q.release(1), q.full
        (True, None, False)
    """

    UNIT = 4096

    def __init__(self, high_water: int = 2048, low_water: int = 512) -> None:
        super().__init__(high_water, low_water)
        self._weights: collections.deque[int] = collections.deque()  # per event, in order
        self.eager = False

    def put(self, batch: list[Any]) -> None:
        """Hand over a batch, each event weighed by its line."""
        if self._stopped:
            return
        weight = 0
        for event in batch:
            line = getattr(event, "line", None)
            w = 1 + (len(line) // self.UNIT if isinstance(line, (bytes, str)) else 0)
            self._weights.append(w)
            weight += w
        super().put(batch)
        self._pending += weight - len(batch)

    def _took(self, n: int) -> Callable[[], None] | None:
        if self.eager:
            self.release(n)
        return None

    def release(self, n: int = -1) -> None:
        """``n`` more events (the oldest taken; all with -1) are done with: read on."""
        weights = self._weights
        total = 0
        for _ in range(len(weights) if n < 0 else min(n, len(weights))):
            total += weights.popleft()
        if total:
            cb = AsyncEventQueue._took(self, total)
            if cb is not None:
                cb()
