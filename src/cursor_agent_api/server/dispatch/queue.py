"""``serve --dispatch queue``: runs are deferred as Procrastinate jobs; workers run them.

:class:`QueueDispatcher` has the run manager's face (``submit``, ``cancel``, ``counts``,
``recover``, ``shutdown``), so the REST API does not change. It

* **submits**: stores the run (``queued``, with its record) and defers one job
  (``lock=<chat>``) to the affinity queue of the worker that ran the chat's last run
  while that worker's heartbeat is fresh, else to the shared queue;
* **relays answers** to what an ACP run asks (:mod:`.answers`: NOTIFY, the worker LISTENs);
* **cancels**: a queued run's job is cancelled (or aborted, if just taken) and the run
  marked ``cancelled`` here; a running one is aborted (Procrastinate tells its worker,
  which stops the agent's process group and records ``cancelled``);
* **sweeps** every few seconds: a job whose worker stopped sending heartbeats (stalled)
  has its run marked ``interrupted`` with a ``worker/lost`` record naming the worker and
  the seq, and the job is finished so that the chat's lock is released — nothing is run
  again (a run the worker had not yet claimed ran nothing: it gets a new job, as below);
  so is a running run whose job ended a minute ago without its end recorded (its worker
  gave up writing it); a run waiting in the affinity queue of a gone worker is moved to
  the shared queue (the worker that takes it starts a new Cursor chat: "context reset"); a
  queued run whose job is over without a worker having taken it (a move or a claim failed
  halfway) is given a new job (``cancelled`` instead if a cancel reached that job,
  ``failed`` after :data:`MAX_JOBS` jobs); a run no job carries a minute after it was
  stored (its API server died in between) is ``interrupted``.

Its own writes are not published by this process: the :class:`~..notify.Relay` publishes
every committed record, in seq order, whoever wrote it.

Example:
    >>> from cursor_agent_api.server.settings import ServerSettings
    >>> ServerSettings(token="t" * 16, dispatch="queue").queue   # the shared queue
    'runs'
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import operator
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from ..hub import Hub
from ..log import EventLog
from ..models import RunStatus
from ..runs import RunNotActiveError, ServerClosingError, SubmitUncertainError, run_record, run_view
from ..settings import ServerSettings
from ..store import AppendOnce, NewRecord, Store, describe_error, is_transient, new_id, now_ms
from ..store.claims import OrphanedRun
from . import CancelNotAppliedError, run_ends
from .jobs import TASK_NAME, make_app, worker_queue

logger = logging.getLogger("cursor_agent_api.server")

UNQUEUED_AFTER = 60.0
"""Seconds after which a queued run that no job carries is given up (its API server died
between storing it and deferring its job)."""

ABANDONED_AFTER = 60.0
"""Seconds after its job ended when a run still ``running`` is given up (its worker did not
record the end: the database refused it, or the worker was stopped first)."""

MAX_JOBS = 5
"""Jobs a run is given in all: when that many ended without a worker taking the run, the
sweep fails it (``NotRun``) rather than giving it another."""


class QueueDispatcher:
    """Runs dispatched to workers through the job queue (see the module doc)."""

    def __init__(self, settings: ServerSettings, store: Store, hub: Hub, *, app: Any = None) -> None:
        from ..notify import Relay

        self.settings = settings
        self.store = store
        self.relay = Relay(store, hub, settings)
        # Not published here (a hub without subscribers): the relay publishes every record.
        self.log = EventLog(store, Hub(), settings.max_field_bytes)
        self.app = app if app is not None else make_app(
            settings.database_url, connect_timeout=settings.store_connect_timeout,
            statement_timeout=settings.store_statement_timeout)
        self._closing = False
        self._sweeper: asyncio.Task[None] | None = None
        self._counts = {"running": 0, "queued": 0}
        self._workers: dict[str, Any] = {"alive": None, "stalled": None, "checked_ms": None,
                                         "lost_runs": 0, "last_lost": None}
        self._lost_now: list[dict[str, Any]] = []  # interrupted by the sweep under way

    # ---- life ------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the queue's connection pool, listen for records, start the sweeper. A step the
        database fails raises :class:`~..app.StartError` naming it, what was opened closed."""
        from ..app import start_step

        try:
            with start_step("the job queue's connection pool"):
                await self.app.open_async()
            with start_step("the LISTEN connection for the workers' records (the relay)"):
                await self.relay.start()
        except BaseException:
            await self.shutdown()
            raise
        self._sweeper = asyncio.create_task(self._sweep_forever(), name="queue-sweeper")

    async def recover(self) -> list[str]:
        """Nothing runs here, so nothing is left from a previous start: sweep once."""
        await self.sweep()
        return []

    async def shutdown(self) -> None:
        """Stop sweeping and close the pool; the runs go on, on their workers."""
        self._closing = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)
        await self.relay.close()
        await self.app.close_async()

    # ---- what the REST API asks ------------------------------------------------------

    def counts(self) -> dict[str, int]:
        """Queued and running runs of the whole cluster (as of the last sweep)."""
        return dict(self._counts)

    def buffered(self) -> dict[str, int]:
        """Events held in memory: none here (workers write them)."""
        return {"events": 0, "bytes": 0}

    def health(self) -> dict[str, Any]:
        """What ``GET /api/health`` says of the cluster, from memory: the relay's LISTEN
        connection (:meth:`~..pg_listen.PgListener.view`) and the workers as of the last
        sweep (``alive``: heartbeats within ``stalled_after``; ``stalled``: registered, but
        silent for longer and not yet pruned: lost; ``checked_ms``: when; ``lost_runs``: runs
        this server marked ``interrupted`` because their worker was lost, ``last_lost``: the
        last such worker and when).

        Example:
            >>> from cursor_agent_api.server.settings import ServerSettings
            >>> from cursor_agent_api.server.store import Store
            >>> url = "postgresql+asyncpg://u@127.0.0.1/db"  # not connected to here
            >>> d = QueueDispatcher(ServerSettings(token="t" * 16, database_url=url, dispatch="queue"),
            ...                     Store(url), Hub())
            >>> d.health()["relay"]["connected"], d.health()["workers"]["alive"]
            (False, None)
        """
        return {"relay": self.relay.view(), "workers": dict(self._workers)}

    def is_active(self, run_id: str) -> bool:
        """Runs are not handled in this process."""
        return False

    async def submit(self, chat: dict[str, Any], prompt: str) -> dict[str, Any]:
        """Store a queued run and defer its job; returns the run (``queued``).

        Raises :class:`~..store.ActiveRunError` when the chat has an active run,
        :class:`~..runs.ServerClosingError` during shutdown.
        """
        if self._closing:
            raise ServerClosingError("the server is shutting down")
        chat_id = str(chat["id"])
        run_id, once = new_id(), AppendOnce()
        try:
            run = await self.log.create_run(
                chat_id, prompt, lambda r: run_record("queued", r), run_id=run_id, once=once
            )
        except Exception as e:
            if once.uncertain and is_transient(e):  # stored or not: no job carries it
                raise SubmitUncertainError(
                    run_id, describe_error(e),
                    ends=f"is marked interrupted by a sweep within {UNQUEUED_AFTER:.0f} s",
                ) from e
            raise
        queue, target = await self._route(chat_id, run_id)
        try:
            job_id = await self.app.configure_task(name=TASK_NAME, lock=chat_id, queue=queue).defer_async(
                run_id=run_id
            )
        except Exception as e:
            reason = describe_error(e)
            logger.error("run %s could not be queued: %s", run_id, reason)
            await run_ends.finish_if_active(
                self.log,
                run,
                RunStatus.FAILED.value,
                error=f"the run could not be queued: {reason}",
                error_type="QueueUnavailable",
            )
            fresh = await self.store.get_run(run_id)
            return run_view(fresh or run)
        placed: dict[str, Any] = {"job_id": job_id, "queue": queue}
        if target is not None:
            placed.update(worker=target["worker"], worker_id=target["worker_id"])
        await self.store.update_run(run_id, **placed)
        return run_view({**run, **placed})

    async def answer(self, run_id: str, request_id: str, body: Any) -> dict[str, Any]:
        """A person's answer to a request of a run on a worker: relayed to it
        (:func:`.answers.relay_answer`); the answer record's payload."""
        from .answers import relay_answer

        return await relay_answer(self.store, run_id, request_id, body)

    async def _route(self, chat_id: str, run_id: str) -> tuple[str, dict[str, Any] | None]:
        """The queue for a run of ``chat_id``: its worker's, while that worker lives."""
        previous = await self.store.previous_worker_run(chat_id, run_id)
        if previous is not None and previous.get("worker_id") is not None:
            alive = await self.store.worker_alive(
                int(previous["worker_id"]), self.settings.stalled_after
            )
            if alive:
                return worker_queue(str(previous["worker"])), previous
        return self.settings.queue, None

    async def cancel(self, run_id: str, *, wait: float = 15.0) -> None:
        """Cancel a queued run, or abort a running one on its worker; waits up to ``wait``
        s for the run to be marked. :class:`~..runs.RunNotActiveError` if it is over,
        :class:`.CancelNotAppliedError` if it is still active when the wait runs out (the
        abort stays asked for: its worker applies it when it can)."""
        deadline = time.monotonic() + wait
        run = await self.store.get_run(run_id)
        if run is not None and plain_serves(run) and not RunStatus(run["status"]).final:
            # no job, no worker: a serve without --dispatch queue runs it, and takes no cancel
            # from the queue (its cancel would never be applied: a 202, the run going on)
            raise RunNotActiveError(
                f"run {run_id} is run by a server without --dispatch queue on this database "
                f"({run['server_id']}), which takes no cancel from the queue's servers: cancel "
                "it through that server")
        while run is not None and run.get("job_id") is None and run["status"] == "queued":
            if time.monotonic() > deadline:  # pragma: no cover - the submit is still under way
                break
            await asyncio.sleep(0.05)  # submit has not stored the job's id yet
            run = await self.store.get_run(run_id)
        if run is None or RunStatus(run["status"]).final:
            raise RunNotActiveError(f"run {run_id} is not active")
        jobs = self.app.job_manager
        for _ in range(MAX_JOBS):  # a sweep may give the run a new job meanwhile: follow it
            job_id = run.get("job_id")
            if job_id is not None:
                # A job nobody took is cancelled, a taken one aborted (its worker stops the run
                # and records it), one that is over stays so; either way Procrastinate keeps
                # the request, so that no sweep gives the run a new job.
                await jobs.cancel_job_by_id_async(int(job_id), abort=True)
            # A queued run was never started (a worker's claim makes it running, atomically):
            # mark it here, whether its job was waiting, just taken, or over.
            if await run_ends.finish_if_active(self.log, run, RunStatus.CANCELLED.value, only=("queued",)):
                break
            fresh = await self.store.get_run(run_id)
            if fresh is None or RunStatus(fresh["status"]).final or fresh.get("job_id") == job_id:
                break  # over, or running on the job just aborted
            run = fresh
        while True:
            fresh = await self.store.get_run(run_id)
            if fresh is None or RunStatus(fresh["status"]).final:
                return
            if time.monotonic() >= deadline:
                raise CancelNotAppliedError(run_id, str(fresh["status"]), wait)
            await asyncio.sleep(0.1)

    # ---- the sweeper -----------------------------------------------------------------

    async def _sweep_forever(self) -> None:
        interval = self.settings.sweep_interval
        while True:
            await asyncio.sleep(interval)
            try:
                await self.sweep()
            except Exception as e:  # the database may be away for a while: try again later
                logger.warning(
                    "the queue sweep failed (%s); trying again in %.0f s", describe_error(e), interval
                )

    async def sweep(self) -> None:
        """Interrupt the runs of stalled workers and those their worker gave up, move stranded
        runs, refresh the counts. A failure particular to one run is logged with its id and
        the sweep goes on with the others (that run is tried again at the next sweep); a
        transient one (the database away) ends this sweep."""
        within = self.settings.stalled_after
        jobs = self.app.job_manager
        stalled = await jobs.get_stalled_jobs(seconds_since_heartbeat=within, task_name=TASK_NAME)
        await self._each(stalled, self._release_stalled, lambda job: job.task_kwargs.get("run_id"))
        abandoned = await self.store.abandoned_runs(ABANDONED_AFTER)
        await self._each(abandoned, self._interrupt_lost)
        await self._each(await self.store.stranded_runs(within), self._move_to_shared_queue)
        orphans = await self.store.orphaned_runs()
        await self._each(orphans, self._recover_orphan, lambda orphan: orphan.run["id"])
        unqueued = await self.store.unqueued_runs(now_ms() - int(UNQUEUED_AFTER * 1000))
        await self._each(unqueued, self._interrupt_unqueued)
        self._counts = await self.store.run_counts()
        await self._count_workers(within)

    async def _count_workers(self, within: float) -> None:
        """The workers alive and stalled (:meth:`~..store.Store.worker_counts`), for :meth:`health`,
        with the runs of lost workers this sweep interrupted: all as of one sweep (a health
        read during a sweep sees the last sweep's figures, never half of this one's)."""
        counts = await self.store.worker_counts(within)
        lost, self._lost_now = self._lost_now, []
        self._workers.update(counts, checked_ms=now_ms())
        self._workers["lost_runs"] += len(lost)
        if lost:
            self._workers["last_lost"] = lost[-1]

    async def _interrupt_lost(self, run: dict[str, Any]) -> None:
        """:func:`interrupt_lost_run`, counted for :meth:`health` (at the sweep's end)."""
        if await interrupt_lost_run(self.log, run):
            worker = run.get("worker") or run.get("server_id") or "unknown"
            self._lost_now.append({"worker": str(worker), "at_ms": now_ms()})

    @staticmethod
    async def _each(
        items: Iterable[Any],
        step: Callable[[Any], Awaitable[Any]],
        run_id: Callable[[Any], Any] = operator.itemgetter("id"),
    ) -> None:
        """``step(item)`` for each item; a non-transient failure is logged and skipped."""
        for item in items:
            try:
                await step(item)
            except Exception as e:
                if is_transient(e):
                    raise
                logger.error(
                    "the queue sweep failed on run %s (%s); it is tried again at the next sweep",
                    run_id(item),
                    describe_error(e),
                )

    async def _release_stalled(self, job: Any) -> None:
        """Finish a job whose worker stopped sending heartbeats, so that the chat's lock is
        released, and interrupt its run if the worker had claimed it (a run still ``queued``
        ran nothing: its job over, the orphans' step gives it a new one)."""
        jobs = self.app.job_manager
        run_id = job.task_kwargs.get("run_id")
        run = await self.store.get_run(str(run_id)) if run_id else None
        if run is not None and run["status"] != "queued" and not RunStatus(run["status"]).final:
            await self._interrupt_lost(run)
        with contextlib.suppress(Exception):  # another API server may have finished it
            from procrastinate.jobs import Status

            await jobs.finish_job_by_id_async(job_id=job.id, status=Status.FAILED, delete_job=False)

    async def _interrupt_unqueued(self, run: dict[str, Any]) -> None:
        await run_ends.finish_if_active(
            self.log,
            run,
            RunStatus.INTERRUPTED.value,
            only=("queued",),
            error="the API server that accepted this run stopped before it was queued",
            error_type="NotQueued",
        )

    async def _move_to_shared_queue(self, run: dict[str, Any]) -> None:
        jobs = self.app.job_manager
        if not await jobs.cancel_job_by_id_async(int(run["job_id"]), abort=False):
            return  # its worker took it after all, or its job is over (then it is an orphan)
        # Should the next step fail, the run is queued behind a cancelled job: an orphan,
        # which the next sweep gives a new job.
        queue = await self._requeue(run)
        if queue is not None:
            logger.warning(
                "run %s waited for worker %s, which is gone: moved to queue %s",
                run["id"],
                run.get("worker"),
                queue,
            )

    async def _recover_orphan(self, orphan: OrphanedRun) -> None:
        """A queued run whose job is over without a worker having taken it: cancelled if a
        cancel reached that job, failed after :data:`MAX_JOBS` jobs, else given a new job
        (nothing of it ran: the run is still queued)."""
        run = orphan.run
        if orphan.cancel_requested:
            await run_ends.finish_if_active(self.log, run, RunStatus.CANCELLED.value, only=("queued",))
        elif orphan.jobs >= MAX_JOBS:
            marked = await run_ends.finish_if_active(
                self.log,
                run,
                RunStatus.FAILED.value,
                only=("queued",),
                error=f"no worker took the run: its {orphan.jobs} jobs ended without running it",
                error_type="NotRun",
            )
            if marked:
                logger.error("run %s failed: its %d jobs ended without running it", run["id"], orphan.jobs)
        else:
            queue = await self._requeue(run)
            if queue is not None:
                logger.warning(
                    "run %s was queued behind job %s, which ended without running it: "
                    "given a new job on queue %s",
                    run["id"],
                    run["job_id"],
                    queue,
                )

    async def _requeue(self, run: dict[str, Any]) -> str | None:
        """Defer a new job for a queued run whose job will not run it (routed as
        :meth:`submit` routes), and point the run at it; its queue, or None if a worker took
        the run meanwhile, or another API server gave it a job first (the new one is
        cancelled)."""
        run_id, chat_id = str(run["id"]), str(run["chat_id"])
        queue, target = await self._route(chat_id, run_id)
        job_id = await self.app.configure_task(name=TASK_NAME, lock=chat_id, queue=queue).defer_async(
            run_id=run_id
        )
        placed: dict[str, Any] = {"job_id": job_id, "queue": queue, "worker": None, "worker_id": None}
        if target is not None:
            placed.update(worker=target["worker"], worker_id=target["worker_id"])
        # The run's own state is the arbiter: only a run still queued behind its old job moves
        # (a worker's claim, atomic too, may have taken it through this job or its old one).
        behind = None if run.get("job_id") is None else int(run["job_id"])
        if await self.store.requeue_run(run_id, behind, **placed):
            return queue
        with contextlib.suppress(Exception):  # not needed; were it left, it would find the run taken
            await self.app.job_manager.cancel_job_by_id_async(job_id, abort=False)
        return None


def lost_message(worker: str, seq: int | None) -> str:
    """What a run whose worker was lost says: where in the chat it was lost (``seq``: the
    seq of the run's last event from its agent; ``None`` before any).

    Example:
        >>> lost_message("w1", 12)
        'worker w1 was lost at seq 12; the run was not run again'
        >>> lost_message("w1", None)
        'worker w1 was lost before any event from its agent; the run was not run again'
    """
    where = f"at seq {seq}" if seq is not None else "before any event from its agent"
    return f"worker {worker} was lost {where}; the run was not run again"


async def interrupt_lost_run(log: EventLog, run: dict[str, Any]) -> bool:
    """Mark a run whose worker is gone ``interrupted``, with a ``worker/lost`` record; True
    if this call marked it (it is not re-run). Its error says where (:func:`lost_message`):
    the seq the run had reached when its end was committed, not when ``run`` was read (a
    worker that looked lost may have gone on writing meanwhile)."""
    worker = str(run.get("worker") or run.get("server_id") or "unknown")
    message = ""

    def said(stored: dict[str, Any]) -> tuple[str, list[NewRecord]]:
        nonlocal message
        message = lost_message(worker, stored.get("last_seq"))
        return message, [run_ends.lost_worker_note(stored, message)]

    marked = await run_ends.finish_if_active(
        log,
        run,
        RunStatus.INTERRUPTED.value,
        error_type="WorkerLost",
        said=said,
        # its open requests closed with its end (the worker cannot write to a run that is over)
        close_requests=("restart", f"worker {worker} was lost while this request waited for an answer"),
    )
    if marked:
        logger.warning("run %s: %s", run["id"], message)
    return marked


def plain_serves(run: dict[str, Any]) -> bool:
    """Whether ``run`` is a ``serve`` without ``--dispatch queue``'s (on the same database):
    its server is recorded from its creation, and it has neither a job nor a worker (a run
    meant for the queue has no server until a worker claims it, recording both).

    Example:
        >>> plain_serves({"server_id": "h:42:7", "job_id": None, "worker": None})
        True
        >>> plain_serves({"server_id": "h:43:7", "job_id": 12, "worker": "build-1"})
        False
        >>> plain_serves({"server_id": None, "job_id": None, "worker": None})  # not deferred yet
        False
    """
    return bool(run.get("server_id")) and run.get("job_id") is None and not run.get("worker")
