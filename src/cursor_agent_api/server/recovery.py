"""Start-up recovery: what a previous server left active is marked ``interrupted``, even when
the database cannot be written at start.

:class:`Recovery` asks the dispatcher once during start-up (``recover``: runs of a dead
server become ``interrupted``, their leftover processes stopped). When that fails for a
reason that may go away by itself (SQLite's lock held by another process, a full disk, a
lost connection: :func:`~.store.is_transient`), the server starts anyway and the recovery is
tried again in the background with backoff (50 ms doubling up to ``max_delay``) until it
succeeds; those runs show ``running`` until then. Any other failure fails the start.

Example:
    >>> import asyncio
    >>> from cursor_agent_api.server.store import StoreUnavailableError
    >>> class Runs:
    ...     failures = 2
    ...     async def recover(self) -> list[str]:
    ...         if self.failures:
    ...             self.failures -= 1
    ...             raise StoreUnavailableError("database is locked")
    ...         return ["r1"]
    >>> async def demo() -> tuple[bool, list[str]]:
    ...     recovery = Recovery(Runs(), max_delay=0.01)
    ...     await recovery.start()  # fails once: goes on in the background
    ...     pending = not recovery.done
    ...     return pending, await recovery.wait()
    >>> asyncio.run(demo())
    (True, ['r1'])
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Protocol

from .store import describe_error, is_transient

logger = logging.getLogger("cursor_agent_api.server")


class Recoverable(Protocol):
    """What :class:`Recovery` asks of the dispatcher."""

    async def recover(self) -> list[str]:
        """Mark what a previous process left active; the run ids marked."""


class Recovery:
    """The start-up recovery of one server: :meth:`start`, then :meth:`stop` at shutdown."""

    def __init__(self, runs: Recoverable, *, max_delay: float) -> None:
        self.runs = runs
        self.max_delay = max_delay
        self._task: asyncio.Task[list[str]] | None = None
        self._marked: list[str] | None = None

    @property
    def done(self) -> bool:
        """True once the previous server's runs are marked (or there were none)."""
        return self._marked is not None

    async def start(self) -> None:
        """Recover now; if the database cannot be written for now, go on in the background.

        Raises what :meth:`Recoverable.recover` raises when it is not transient."""
        try:
            self._marked = await self.runs.recover()
        except Exception as e:
            if not is_transient(e):
                raise
            logger.warning(
                "cannot mark the runs left active by a previous server interrupted yet (%s): "
                "serving meanwhile and retrying until the database can be written; they show "
                "as running until then", describe_error(e))
            self._task = asyncio.create_task(self._retry(), name="start-up-recovery")
            return
        _said(self._marked)

    async def wait(self) -> list[str]:
        """The run ids marked, once the recovery is done or given up (then none)."""
        if self._task is not None:
            return await asyncio.shield(self._task)
        return list(self._marked or [])

    async def stop(self) -> None:
        """Stop retrying (shutdown): the next start recovers what is left."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _retry(self) -> list[str]:
        delay = 0.05
        while True:
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.max_delay)
            try:
                self._marked = await self.runs.recover()
            except Exception as e:
                if is_transient(e):
                    continue
                logger.error("gave up marking the runs left active by a previous server "
                             "interrupted (%s): the next start tries again", describe_error(e))
                return []
            _said(self._marked, late=True)
            return self._marked


def _said(marked: list[str], late: bool = False) -> None:
    if marked:
        logger.warning("marked %d run(s) of a previous server as interrupted%s", len(marked),
                       " (the database can be written again)" if late else "")
    elif late:
        logger.warning("the database can be written again: no run of a previous server was left")


__all__ = ["Recoverable", "Recovery"]
