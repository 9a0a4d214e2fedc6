"""The private event-loop thread that runs the async core for the sync API.

What lives here: :class:`LoopThread`, an asyncio loop on a daemon thread (the
idea of anyio's blocking portal), reference-counted: it starts on first use
and stops when the last user releases it. Because the sync API never runs a
loop on the caller's thread, it also works inside a running event loop (a
notebook cell, an async web handler). What does not: any lifecycle policy —
that is :mod:`.run`'s, and there is no second copy of it.

Example:
    >>> import asyncio
    >>> portal = LoopThread()
    >>> loop = portal.acquire()
    >>> portal.call(asyncio.sleep, 0, "done")
    'done'
    >>> portal.release()
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

__all__ = ["LoopThread", "wait_for"]

T = TypeVar("T")

WAKE_STEP: Final = 0.1
"""How long a waiting thread blocks at most between two looks at its signals (here, and in
:meth:`.sinks.ThreadEventQueue.get`)."""


def wait_for(future: concurrent.futures.Future[T], timeout: float | None = None, *,
             check: Callable[[], None] | None = None) -> T:
    """``future.result(timeout)``, in steps, so that Ctrl-C always interrupts the wait.

    The kernel may deliver SIGINT to any thread, and here it is often the loop thread, which
    sits in ``epoll``. Python then runs the handler in the main thread, but only once that
    thread runs bytecode again: an untimed ``result()`` would keep the ``KeyboardInterrupt``
    waiting until the turn ends (forever, for an agent that says nothing). ``check`` (if
    given) runs between two steps and may raise to end the wait (the loop thread is gone).

    Example:
        >>> f: concurrent.futures.Future[str] = concurrent.futures.Future()
        >>> f.set_result("done")
        >>> wait_for(f)
        'done'
    """
    if timeout is not None and timeout <= WAKE_STEP:
        return future.result(timeout)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        step = WAKE_STEP if deadline is None else min(WAKE_STEP, max(deadline - time.monotonic(), 0.0))
        try:
            return future.result(step)
        except concurrent.futures.TimeoutError:
            if deadline is not None and time.monotonic() >= deadline:
                raise
            if check is not None:
                check()


_GONE: Final = (
    "the sync client's event-loop thread is gone: the interpreter is exiting, or this process "
    "was forked after the client was used (its agent, turns and tool server are the "
    "parent's): make a new client in the child")


class LoopThread:
    """An asyncio event loop on its own daemon thread, started and stopped by reference count.

    ``acquire()`` starts it if needed and returns the loop; ``release()`` stops
    it with the last reference (from any thread, the loop's own included); :meth:`hold` is
    an owner's one reference (the sync client's, from its first call to its ``close()``).
    ``call(fn, *args)`` runs ``fn(*args)`` (a coroutine function) on the loop
    and waits for its value. A loop that can never answer is a ``RuntimeError``, not a wait
    for ever (:meth:`check_caller`): called from the loop's own thread, or once its thread is
    gone (the interpreter is exiting, or this is a forked child, where no thread of the
    parent runs); :attr:`reachable` says whether the thread is there, and :meth:`release`
    does not wait for one that is not.

    Example:
        >>> portal = LoopThread()
        >>> loop = portal.acquire()
        >>> portal.call(asyncio.sleep, 0, "awaited"), loop.is_running()
        ('awaited', True)
        >>> portal.release()
    """

    def __init__(self, name: str = "cursor-agent-api-loop") -> None:
        self.name = name
        self._lock = threading.Lock()
        self._refs = 0
        self._held = False  # one of the references is the owner's (hold(), until let_go())
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        # loop threads stopped by a last release, maybe still finishing: an acquire() waits
        # for them (but its own) before it starts a loop
        self._stopping: list[threading.Thread] = []

    @property
    def reachable(self) -> bool:
        """False once the loop thread is gone: its interpreter is exiting (daemon threads no
        longer run) or the process forked (the child has only the thread that forked)."""
        thread = self._thread
        return thread is None or (thread.is_alive() and not sys.is_finalizing())

    def check_caller(self) -> None:
        """``RuntimeError`` if a call on the loop made here could never be answered: from
        the loop's own thread (it would wait for itself), or with the loop thread gone.

        Example:
            >>> portal = LoopThread()
            >>> loop = portal.acquire()
            >>> portal.call(asyncio.to_thread, portal.check_caller)
            >>> async def inside(): portal.check_caller()
            >>> portal.call(inside)  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            RuntimeError: a sync call from the loop thread ... would wait for itself for ever: ...
            >>> portal.release()
        """
        thread = self._thread
        if thread is None:
            return
        if threading.current_thread() is thread:
            raise RuntimeError(
                "a sync call from the loop thread of cursor-agent-api's sync client (say, in an "
                "async callback) would wait for itself for ever: use AsyncCursorAgentClient "
                "there, or call the sync client from another thread")
        if not self.reachable:
            raise RuntimeError(_GONE)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The running loop (``RuntimeError`` when not acquired)."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("LoopThread is not running: call acquire() first")
        return loop

    def hold(self) -> asyncio.AbstractEventLoop:
        """The owner's one reference: taken by the first call, kept by the later ones (from any
        threads at once) until :meth:`let_go`; the loop.

        Example:
            >>> portal = LoopThread()
            >>> portal.hold() is portal.hold(), portal._refs, portal.let_go(), portal.let_go()
            (True, 1, True, False)
            >>> portal.release(); portal._thread is None
            True
        """
        return self.acquire(hold=True)

    def let_go(self) -> bool:
        """Whether the owner held its reference (:meth:`hold`), which it gives back with
        :meth:`release` once done with the loop; the next :meth:`hold` takes a new one."""
        with self._lock:
            held, self._held = self._held, False
        return held

    def acquire(self, *, hold: bool = False) -> asyncio.AbstractEventLoop:
        """Take a reference (``hold``: the owner's, see :meth:`hold`); start the loop thread if
        it is not running.

        A loop whose last reference was let go may still be finishing (its tasks cancelled,
        an ``agent acp`` stopped): it ends before a new loop takes over. It is joined outside
        the lock (what it finishes may release a reference), then everything is looked at
        again, as if for the first time: meanwhile another ``acquire()`` may have started a
        loop, and that loop's last reference may have been let go too. What is seen and what
        is done about it are one locked section. On a stopping loop's own thread (what it
        finishes uses the sync API), no stopping loop is waited for: it cannot wait for itself,
        and another may be joining it (the loop it started there and released).
        ``RuntimeError`` as the interpreter finalizes (no thread can start then, nor answer).

        Example:
            >>> portal = LoopThread()
            >>> portal.acquire() is portal.acquire(), portal._refs
            (True, 2)
            >>> portal.release(); portal.release(); portal._thread is None
            True
        """
        if sys.is_finalizing():  # (a __del__ at exit: a new thread would never start)
            raise RuntimeError(_GONE)
        me = threading.current_thread()
        while True:
            with self._lock:
                self._stopping = [t for t in self._stopping if t.is_alive()]
                # a stopping loop's own thread waits for none: not for itself, nor for another
                # one that may be joining it (its finishing code released a loop it started).
                # (A copy: a release meanwhile lists its loop, maybe this thread's, in the
                # next look, not in this one's joins)
                stopping = [] if me in self._stopping else list(self._stopping)
                if not stopping:
                    if hold and self._held:  # (then the loop runs)
                        return self.loop
                    if self._loop is None:
                        loop = asyncio.new_event_loop()
                        started = threading.Event()
                        thread = threading.Thread(
                            target=self._main, args=(loop, started), name=self.name, daemon=True
                        )
                        thread.start()
                        started.wait()
                        self._loop, self._thread = loop, thread
                    self._refs += 1
                    self._held = self._held or hold
                    return self._loop
            for thread in stopping:
                thread.join()

    def release(self) -> None:
        """Drop a reference; the last one stops the loop, and joins it unless on its thread
        (an :meth:`acquire` meanwhile, from any thread, waits for its end as well)."""
        with self._lock:
            if self._refs <= 0:
                return
            self._refs -= 1
            if self._refs:
                return
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
            assert loop is not None and thread is not None
            if not (thread.is_alive() and not sys.is_finalizing()):
                return  # nothing runs it any more (and a join would wait for ever)
            loop.call_soon_threadsafe(loop.stop)  # (first: only a stopping loop is listed)
            self._stopping.append(thread)
        if threading.current_thread() is not thread:
            thread.join()

    @staticmethod
    def _main(loop: asyncio.AbstractEventLoop, started: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(started.set)
        try:
            loop.run_forever()
        finally:
            try:
                pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
                for task in pending:
                    task.cancel()
                if pending:
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                asyncio.set_event_loop(None)
                loop.close()

    def submit(self, fn: Callable[..., Awaitable[T]], *args: Any) -> concurrent.futures.Future[T]:
        """Start ``fn(*args)`` on the loop; a :class:`concurrent.futures.Future` of its value
        (``RuntimeError`` with the loop thread gone)."""
        if not self.reachable:
            self.check_caller()

        async def runner() -> T:
            return await fn(*args)

        return asyncio.run_coroutine_threadsafe(runner(), self.loop)

    def call(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``fn(*args)`` on the loop and wait for its value (or exception);
        ``RuntimeError`` if it could never come (:meth:`check_caller`)."""
        self.check_caller()
        return wait_for(self.submit(fn, *args), check=self.check_caller)
