"""In-process dispatch: the runs a killed server of this host left active are ended in time.

Several servers may share one database (docs/server.md, "Several servers, one database"); each
runs its own runs. One that is killed (SIGKILL, the OOM killer) leaves its runs ``running``. Its
restart ends them, and so does a cancel or a prompt sent to another server; without either they
stayed ``running``. :class:`DeadOwnerWatch` has each server look every
``dead_owner_check_interval`` seconds (10 by default) at the active runs owned by a process of
its own host (:meth:`~..runs.RunManager.end_dead_owners_runs`: one indexed query of the active
runs, nothing more when none is left by a dead process): those whose process is gone are ended
``interrupted`` as a restart ends them, and every client sees that end as any other. Runs of
servers on other hosts are left to them, and so are those of servers of another PID namespace of
this host (another container with the same host name): whether such a process lives cannot be
told from here (``identity_alive(..., certain=True)``). A look that fails (the database away) is
tried again at the next one; the failure is logged once, and again once a look works.

Example:
    >>> import asyncio
    >>> async def demo() -> list[str]:
    ...     looked = asyncio.Event()
    ...     async def check() -> list[str]:
    ...         looked.set()
    ...         return ["r1"]
    ...     watch = DeadOwnerWatch(check, interval=0.01)
    ...     watch.start()
    ...     await asyncio.wait_for(looked.wait(), 10)
    ...     await watch.stop()
    ...     return await check()
    >>> asyncio.run(demo())
    ['r1']
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from ..store import describe_error, is_transient

logger = logging.getLogger("cursor_agent_api.server")


class DeadOwnerWatch:
    """Call ``check`` (it ends the runs of dead owners, returns their ids) every ``interval``
    seconds, from :meth:`start` until :meth:`stop`."""

    def __init__(self, check: Callable[[], Awaitable[list[str]]], *, interval: float) -> None:
        self.check = check
        self.interval = interval
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Look for the first time ``interval`` s from now (the start-up recovery has just
        ended the runs of this server's previous process)."""
        self._task = asyncio.create_task(self._watch(), name="dead-owner-watch")

    async def stop(self) -> None:
        """Stop looking (shutdown)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _watch(self) -> None:
        failing = False  # the looks fail (the database away): said once, until one works again
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.check()
            except Exception as e:  # the database may be away for a while: the next look
                if failing:
                    logger.debug("looking for runs left by a dead server process failed again",
                                 exc_info=True)
                elif not is_transient(e):
                    logger.exception("looking for runs left by a dead server process failed; "
                                     "trying again every %g s (said once)", self.interval)
                else:
                    logger.warning("looking for runs left by a dead server process failed (%s); "
                                   "trying again every %g s (said once)", describe_error(e),
                                   self.interval)
                failing = True
                continue
            if failing:
                logger.info("looking for runs left by a dead server process works again")
                failing = False


__all__ = ["DeadOwnerWatch"]
