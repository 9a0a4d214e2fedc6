"""Hand-off of events from a running turn to whoever iterates it, with back-pressure.

What lives here: :class:`AsyncEventQueue` (consumer on the same event loop)
and :class:`ThreadEventQueue` (consumer on another thread: the sync API). The
run puts each batch of events as soon as a chunk of output completes them —
nothing waits to fill a batch — with what each event changed in the turn's transcript
(``put(events, changes)``: the two lists in step; the consumer takes them together, a
tuple: a batch), and pauses reading stdout while more than ``high_water`` events wait to
be consumed, so memory stays flat even with a slow consumer. What does not: the run
itself (:mod:`.run`).

Example:
    >>> q = ThreadEventQueue(high_water=2, low_water=1)
    >>> q.put(["e1", "e2"], [(), ()]); q.close()
    >>> q.full, q.get(), q.get() is END
    (True, (['e1', 'e2'], [(), ()]), True)
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import itertools
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Final

from .portal import WAKE_STEP

__all__ = ["END", "STOPPED", "AsyncEventQueue", "EventSink", "HeldEventQueue", "ThreadEventQueue"]

END: Final = object()
"""Returned by ``get`` once the run has ended and every batch was taken."""

STOPPED: Final = object()
"""Returned by ``get`` once the consumer called ``stop`` (cancel, close)."""

_NEVER: Final = object()  # the sentinel of ThreadEventQueue's one-item iterator: never put

DEFAULT_HIGH_WATER = 8192
DEFAULT_LOW_WATER = 1024


class EventSink:
    """What a run writes to (on the loop's thread): the base of both queues.

    ``put`` a batch (the events and their changes), ``close`` at the end; ``full`` says the
    consumer is behind; ``pause(on_drain)`` arms a callback run on the loop once it has
    caught up (returns False when it already has).

    Example:
        >>> sink: EventSink = ThreadEventQueue(high_water=1, low_water=1)
        >>> sink.put(["event"], [()]); sink.full
        True
    """

    def __init__(self, high_water: int, low_water: int) -> None:
        self.high_water = high_water
        self.low_water = low_water
        self._pending = 0
        self._paused_cb: Callable[[], None] | None = None
        self._armed = 0  # how many times pause() armed a callback
        self._stopped = False
        self._lock = threading.Lock()

    @property
    def backlog(self) -> int:
        """Events (or units of weight) put and not yet consumed."""
        return self._pending

    @property
    def full(self) -> bool:
        """True while ``high_water`` or more events wait to be consumed."""
        return self.backlog >= self.high_water and not self._stopped

    @property
    def stopped(self) -> bool:
        """True once the consumer has gone (``stop`` was called)."""
        return self._stopped

    def pause(self, on_drain: Callable[[], None]) -> bool:
        """Arm ``on_drain`` for when the backlog falls under ``low_water``; False if it has."""
        with self._lock:
            if self._stopped or self.backlog < self.low_water:
                return False
            self._paused_cb = on_drain
            self._armed += 1
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

    def put(self, events: list[Any], changes: list[Any]) -> None:  # pragma: no cover - abstract
        """Hand over a batch of events and, in step, what each changed."""
        raise NotImplementedError

    def close(self) -> None:  # pragma: no cover - abstract
        """The run has ended: no more batches."""
        raise NotImplementedError


class ThreadEventQueue(EventSink):
    """Batches from the loop's thread to a consumer thread (the sync ``StreamingResponse``).

    Loss-free under Ctrl-C: :meth:`head` moves the next item into :attr:`taken` in one C-level
    step (no bytecode between taking it and storing it, so a ``KeyboardInterrupt`` cannot fall
    in between) and returns it *without* letting it go; the consumer lets a batch go
    (:meth:`release`) once it has handed out its last event. A Ctrl-C anywhere in a
    ``head()`` therefore leaves the batch in :attr:`taken`, and the next ``head()`` returns it.

    Back-pressure counts the events put and not yet handed out; the loop's drain callback is
    called from ``head()`` (before it blocks), and called again if a Ctrl-C fell between its
    check and its call (resuming is idempotent).

    Example:
        >>> q = ThreadEventQueue()
        >>> q.put(["e1", "e2"], [(), ()]); q.head()[0], q.head()[0], q.backlog
        (['e1', 'e2'], ['e1', 'e2'], 2)
        >>> q.release(); q.backlog, q.taken
        (0, deque([]))
        >>> q.stop(); q.get() is STOPPED
        True
    """

    def __init__(
        self, high_water: int = DEFAULT_HIGH_WATER, low_water: int = DEFAULT_LOW_WATER
    ) -> None:
        super().__init__(high_water, low_water)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._q: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.taken: collections.deque[Any] = collections.deque()
        """Items taken from the turn and not yet let go: ``taken[0]`` is the consumer's."""
        self._put_events = 0  # written by the loop's thread only
        self.handed = 0
        """Events handed out (written by the consumer only, as it lets each batch go)."""

    @property
    def backlog(self) -> int:
        """Events put and not yet handed out."""
        return self._put_events - self.handed

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop the run lives on (where the drain callback is called)."""
        self._loop = loop

    def put(self, events: list[Any], changes: list[Any]) -> None:
        """Hand over a batch (dropped once the consumer stopped)."""
        if self._stopped:
            return
        self._put_events += len(events)
        self._q.put((events, changes))

    def close(self) -> None:
        """No more batches: ``head`` returns :data:`END` after the last one."""
        self._q.put(END)

    def head(self, timeout: float | None = None) -> Any:
        """The consumer's item: ``taken[0]`` — the next batch (a tuple), :data:`END` or
        :data:`STOPPED`, taken from the turn if none is held; it stays there until
        :meth:`release`. Blocks, at most ``timeout`` seconds if given (``TimeoutError``
        then, and nothing is taken).

        It wakes every :data:`WAKE_STEP` s, so that a Ctrl-C the kernel gave to another
        thread is raised here (see :func:`.portal.wait_for`).

        Example:
            >>> ThreadEventQueue().head(timeout=0)
            Traceback (most recent call last):
            ...
            TimeoutError: no batch within 0 s
        """
        taken = self.taken
        self._drain()
        if not taken:
            deadline = None if timeout is None else time.monotonic() + timeout
            take_one = self._take_one
            while True:
                step = WAKE_STEP if deadline is None \
                    else min(WAKE_STEP, max(deadline - time.monotonic(), 0.0))
                try:
                    # one C call takes the item and stores it in `taken`: a Ctrl-C is raised
                    # between bytecodes, so never after the take and before the store
                    taken.extend(take_one(step))
                    break
                except queue.Empty:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise TimeoutError(f"no batch within {timeout:g} s") from None
        return taken[0]

    def _take_one(self, step: float) -> Iterator[Any]:
        """An iterator over one item of the turn's queue, taken when iterated (``queue.Empty``
        if none comes within ``step`` seconds); C objects all the way down."""
        get = functools.partial(self._q.get, True, step) if step > 0 else self._q.get_nowait
        return itertools.islice(iter(get, _NEVER), 1)

    def release(self) -> None:
        """Let ``taken[0]`` go (the consumer has handed out all of it)."""
        item = self.taken.popleft()
        if type(item) is tuple:
            self.handed += len(item[0])

    def get(self, timeout: float | None = None) -> Any:
        """:meth:`head`, let go at once: the next batch, :data:`END` or :data:`STOPPED` (a
        consumer that needs no Ctrl-C safety).

        Example:
            >>> q = ThreadEventQueue(); q.put([1], [()]); q.close()
            >>> q.get(), q.get() is END
            (([1], [()]), True)
        """
        item = self.head(timeout)
        if type(item) is tuple:
            self.release()
            self._drain()
        return item

    def _drain(self) -> None:
        """Call the loop's drain callback if the consumer has caught up. It is disarmed only
        once called: a Ctrl-C before the call leaves it armed for the next ``head()``."""
        with self._lock:
            cb, armed = self._paused_cb, self._armed
            if cb is None or self.backlog >= self.low_water:
                return
        self._call_on_loop(cb)
        with self._lock:
            if self._armed == armed:
                self._paused_cb = None

    def stop(self) -> None:
        """The consumer has gone: wake a blocked ``head`` and drop later batches."""
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
        ...     q.put([1], [()]); q.close()
        ...     return await q.get(), (await q.get()) is END
        >>> asyncio.run(main())
        (([1], [()]), True)
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

    def put(self, events: list[Any], changes: list[Any]) -> None:
        """Hand over a batch (dropped once the consumer stopped)."""
        if self._stopped:
            return
        self._pending += len(events)
        self._items.append((events, changes))
        self._wake()

    def close(self) -> None:
        """No more batches."""
        self._items.append(END)
        self._wake()

    async def get(self) -> Any:
        """Next batch (``(events, changes)``), :data:`END` or :data:`STOPPED`."""
        while not self._items:
            if self._stopped:
                return STOPPED
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        item = self._items.popleft()
        if type(item) is tuple:
            cb = self._took(len(item[0]))
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
        >>> q.put([Line()], [()]); q.full
        True
        >>> q._took(1); q.full, q.release(1), q.full
        (True, None, False)
    """

    UNIT = 4096

    def __init__(self, high_water: int = 2048, low_water: int = 512) -> None:
        super().__init__(high_water, low_water)
        self._weights: collections.deque[int] = collections.deque()  # per event, in order
        self.eager = False

    def put(self, events: list[Any], changes: list[Any]) -> None:
        """Hand over a batch, each event weighed by its line."""
        if self._stopped:
            return
        weight = 0
        for event in events:
            line = getattr(event, "line", None)
            w = 1 + (len(line) // self.UNIT if isinstance(line, (bytes, str)) else 0)
            self._weights.append(w)
            weight += w
        super().put(events, changes)
        self._pending += weight - len(events)

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
