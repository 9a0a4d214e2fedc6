"""The worker's ending signals reach its main thread, whichever thread the kernel gives them to.

The kernel gives a process's signal (``kill PID``, Ctrl-C, a supervisor's SIGTERM) to any of
its threads that does not block it: the main thread when it can take it, another one when
the main thread still has a signal pending (a second signal right after the first, the
worker's documented "die at once"). Python's C handler then runs in that thread, but the
Python handler runs in the main thread only, when it next runs Python code: a main thread
asleep in its event loop's wait, or in a join, slept on. At the worker's end it waits so for
the loop's executor's threads (asyncio's teardown): a signal given to one of them, stuck in a
read, was held, or ended the worker, only once that thread ended: for ever if it never did.

The worker's threads, all started by the main thread (a thread is born with its creator's
signal mask): its log lines' writer (:mod:`.log_output`); asyncio's default executor (its
``to_thread`` calls, the name lookups of asyncpg's and psycopg's connects); asyncio's
child watcher (Python 3.11 and older: one thread per agent, in ``waitpid``); the thread
asyncio's teardown joins the executor in. Procrastinate, psycopg and asyncpg start none of
their own. So:

- while the main thread waits in its event loop, any thread's signal wakes it
  (:class:`SignalWake`: the handlers' wakeup file descriptor, read by the loop);
- the log lines' writer, which the main thread joins after the loop, is born with the
  ending signals blocked (:func:`without_ending_signals`): they go to the main thread. The
  executor's threads keep them: their calls start processes (``git`` and its hooks), which
  would inherit the blocked signals.

Example:
    >>> import asyncio, signal, threading
    >>> async def a_thread_takes_it() -> str:
    ...     wake = SignalWake()
    ...     wake.watch(asyncio.get_running_loop())
    ...     try:
    ...         to_itself = lambda: signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
    ...         threading.Thread(target=to_itself).start()  # a thread takes the signal
    ...         await asyncio.sleep(30)  # the main thread wakes: its handler raises
    ...     except LookupError as e:
    ...         return str(e)
    ...     finally:
    ...         wake.close()
    >>> def handler(signum: int, frame: object) -> None:
    ...     raise LookupError("handled in the main thread")
    >>> previous = signal.signal(signal.SIGUSR1, handler)
    >>> asyncio.run(a_thread_takes_it())
    'handled in the main thread'
    >>> _ = signal.signal(signal.SIGUSR1, previous)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterator

from ..signal_exit import ENDING

__all__ = ["SignalWake", "without_ending_signals"]


@contextlib.contextmanager
def without_ending_signals() -> Iterator[None]:
    """Inside, this thread blocks Ctrl-C, SIGTERM and SIGHUP: a thread started inside is
    born so, and the kernel gives those signals to a thread that takes them (the main
    thread). One that comes meanwhile waits, and is taken as the block ends.

    Example:
        >>> import signal, threading
        >>> masks = []
        >>> with without_ending_signals():
        ...     thread = threading.Thread(
        ...         target=lambda: masks.append(signal.pthread_sigmask(signal.SIG_BLOCK, [])))
        ...     thread.start()
        >>> thread.join()
        >>> signal.SIGTERM in masks[0], signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        (True, False)
    """
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, ENDING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class SignalWake:
    """A pipe that Python's C signal handler writes a byte to, in whichever thread it runs
    (``signal.set_wakeup_fd``), and that an event loop reads (:meth:`watch`): the loop's
    thread, the main one, wakes and runs the Python handler. Set from :meth:`watch` until
    :meth:`close` (after the loop's end: asyncio's teardown waits in the loop). The loop's
    own signal handlers (``add_signal_handler``) set their own meanwhile; the worker's
    (:func:`~cursor_agent_api.server.worker.serve_worker`) set this one back as they end."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        for fd in (self._read, self._write):
            os.set_blocking(fd, False)
        self._previous: int | None = None

    @property
    def fd(self) -> int:
        """The file descriptor the signals' C handler writes to."""
        return self._write

    def watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Read the pipe in ``loop`` and make it the wakeup file descriptor (main thread)."""
        loop.add_reader(self._read, self._drain)
        self._previous = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)

    def _drain(self) -> None:
        with contextlib.suppress(OSError):  # (emptied: BlockingIOError)
            while os.read(self._read, 512):
                pass

    def close(self) -> None:
        """Set the wakeup file descriptor back, if it is still this one; close the pipe.
        (The loop, closed by now, no longer reads it.)"""
        if self._previous is not None:
            current = signal.set_wakeup_fd(self._previous)
            if current != self._write:  # (someone else's since: theirs stays)
                signal.set_wakeup_fd(current)
            self._previous = None
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)
