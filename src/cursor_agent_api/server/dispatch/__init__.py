"""Where runs execute: in this process, or on workers through a job queue.

A dispatcher is what the REST API calls to start and stop runs (:class:`Dispatcher`).
Two exist: the server's own :class:`~..runs.RunManager` (``serve``, the default) and
:class:`~.queue.QueueDispatcher` (``serve --dispatch queue``: Procrastinate jobs on the
server's PostgreSQL, run by ``cursor-agent-api worker``, :mod:`..worker`). Another engine
would be a third class with the same face.

Example:
    >>> DISPATCH_MODES
    ('inprocess', 'queue')
"""

from __future__ import annotations

from typing import Any, Protocol

from ..log import EventLog
from ..settings import ServerSettings

DISPATCH_MODES = ("inprocess", "queue")


class CancelNotAppliedError(Exception):
    """A cancel was sent, and it stays asked for, but the run was still active when the
    wait ran out (its worker has not applied it yet: it is busy, or stopping, or gone — then
    a sweep ends the run). ``status`` is the run's status at that moment.

    Example:
        >>> str(CancelNotAppliedError("r1", "running", 15.0))
        'the cancel of run r1 was sent but not applied within 15 s: the run is still running'
    """

    def __init__(self, run_id: str, status: str, wait: float) -> None:
        super().__init__(
            f"the cancel of run {run_id} was sent but not applied within {wait:g} s: "
            f"the run is still {status}"
        )
        self.run_id = run_id
        self.status = status


class Dispatcher(Protocol):
    """What the REST API asks of whoever executes runs."""

    async def submit(self, chat: dict[str, Any], prompt: str) -> dict[str, Any]:
        """Queue a run of ``prompt`` on ``chat``; returns its view (``queued``)."""

    async def cancel(self, run_id: str, *, wait: float = 15.0) -> None:
        """Stop a queued or running run; returns once it is marked. A dispatcher whose runs
        are elsewhere raises :class:`CancelNotAppliedError` when ``wait`` s pass first."""

    def counts(self) -> dict[str, int]:
        """``{"running": n, "queued": m}``."""

    def buffered(self) -> dict[str, int]:
        """Agent events held in memory, not yet stored (``{"events", "bytes"}``)."""

    async def recover(self) -> list[str]:
        """At start: mark what a previous process left active; returns the run ids marked."""

    async def shutdown(self) -> None:
        """At stop: stop what runs here, mark it, release everything."""


async def open_dispatcher(settings: ServerSettings, log: EventLog) -> Dispatcher:
    """The dispatcher ``settings.dispatch`` names, started.

    ``"queue"`` also starts the relay that brings the workers' records to this
    server's WebSockets (:mod:`..notify`); it is closed with the dispatcher.
    """
    if settings.dispatch == "queue":
        from .queue import QueueDispatcher

        dispatcher = QueueDispatcher(settings, log.store, log.hub)
        await dispatcher.start()
        return dispatcher
    from ..runs import RunManager

    return RunManager(settings, log)
