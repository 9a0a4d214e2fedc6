"""Running a blocking function of the user's (a ``@tool``, a steering callback) off the event
loop, in a daemon thread of its own that a cancel may abandon.

What lives here: :func:`in_daemon_thread`, used by the tools
(:mod:`cursor_agent_api.tools.functions`) and the ACP steering callbacks
(:mod:`.acp_steering`). Why not ``asyncio.to_thread`` (the loop's default executor) or anyio's
worker threads: the interpreter joins both at exit (before ``atexit``), and a cancelled await
leaves the call running on a thread the pool still counts. A callback that waits on ``input()``
for a person who walked away would then hold the program's exit for ever, and a few such calls
fill the executor (``min(32, cpus + 4)`` threads), so later calls — and whatever else uses that
executor, such as stopping a process group — wait behind them.

Example:
    >>> import asyncio, threading
    >>> async def main() -> str:
    ...     return await in_daemon_thread(lambda: threading.current_thread().name, "demo")
    >>> asyncio.run(main())
    'demo'
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread

__all__ = ["in_daemon_thread"]

_T = TypeVar("_T")


async def in_daemon_thread(fn: Callable[[], _T], name: str) -> _T:
    """``fn()`` in a daemon thread of its own, ``name``d (with the caller's context
    variables), awaited.

    As ``anyio.to_thread.run_sync(fn, abandon_on_cancel=True)``, bounded by the same limiter
    (anyio's default: 40 calls at once; an abandoned call gives its place back), but the
    thread is a daemon: a call that a cancel (the end of its turn, a timeout, the client's
    close) abandoned never keeps the program from exiting, and its outcome is dropped. A
    thread per call is cheap beside what such a call waits for (a person, an HTTP round trip).
    What ``fn`` raises is raised here, but a ``StopIteration`` (which no future can carry: the
    wait would never end), raised as ``RuntimeError("function raised StopIteration")`` from it,
    as an ``async def`` raising one does (``coroutine raised StopIteration``).

    Example:
        >>> import asyncio
        >>> async def boom() -> None:
        ...     await in_daemon_thread(lambda: 1 / 0, "boom")
        >>> asyncio.run(boom())
        Traceback (most recent call last):
        ...
        ZeroDivisionError: division by zero
        >>> asyncio.run(in_daemon_thread(lambda: next(iter(())), "stop"))
        Traceback (most recent call last):
        ...
        RuntimeError: function raised StopIteration
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[_T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, error: BaseException | None) -> None:
        if done.done():  # abandoned: its outcome is dropped
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(value)

    def work() -> None:
        value: Any = None
        error: BaseException | None = None
        try:
            value = context.run(fn)
        except StopIteration as exc:  # a future cannot carry it: as a coroutine says it
            error = RuntimeError("function raised StopIteration")
            error.__cause__ = exc
        except BaseException as exc:  # handed to the caller, whatever it is
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop has closed: no one waits any more
            loop.call_soon_threadsafe(settle, value, error)

    async with anyio.to_thread.current_default_thread_limiter():
        threading.Thread(target=work, name=name, daemon=True).start()
        return await done
