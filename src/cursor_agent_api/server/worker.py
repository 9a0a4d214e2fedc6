"""``cursor-agent-api worker``: take runs from the job queue and execute them here.

A worker is a Procrastinate worker (heartbeats, ``lock=<chat>``, aborts) with one task:
run the stored run ``run_id``. For each job it

1. **claims** the run: ``queued`` → ``running`` in one statement, recording its owner
   (``server_id`` = this process's ``host:pid:start-time``), its name (``worker``, also its
   affinity queue ``worker.<name>``), Procrastinate's id of it and the job. A run that is
   no longer queued (cancelled meanwhile) is left alone; a claim that fails (the database
   is away) fails the job and leaves the run queued, for the API servers' sweep to give it
   a new job;
2. **derives the workspace** from the chat's, within this worker's ``--root`` directories
   (a path outside them fails the run with the reason);
   (with ``--worktrees DIR``, a repository's chat gets its own git worktree there,
   :mod:`.worktrees`);
3. **resets the context** when the chat's previous turn ran on another worker (its Cursor
   chat lives on that worker's disk): the chat's Cursor chat id is forgotten and a
   ``context/reset`` record says so;
4. **executes and records** the run with the server's own :class:`~.runs.RunManager`
   (:meth:`~.runs.RunManager.start`): the same client, the same per-chat seqs and
   records, written straight into the shared store (each commit notifies the API
   servers). Events never travel through the queue.

**Cancel**: an abort from any API server cancels the job's task; the worker stops the
agent's process group through the client and records ``cancelled``. **SIGTERM or
SIGINT** (or SIGHUP; :meth:`Worker.stop`): no new job is taken (one fetched at that very moment is
left queued, for another worker); runs that end within ``--shutdown-grace`` seconds end
normally, the rest are stopped and recorded ``interrupted`` (one whose cancel is still being
applied then is stopped with them, normally recorded ``cancelled``, ``interrupted`` if its
run's task itself has to be cancelled: a job does not end before its run; one aborted twice
before its run began waits for its claim or worktree step, bounded by their timeouts).
While it drains, the worker keeps sending heartbeats and taking cancels
(Procrastinate stops both as its own stop begins: :meth:`Worker._beat`,
:meth:`Worker._poll_aborts`): it is not declared lost, its chats are not freed while their
agents run. A second signal stops the runs at once
(``interrupted``); a further one says so. From the first signal every database query waits
:data:`STOP_WAIT` seconds at most (those of the queue already waiting too) and a run's events
and end are retried for :data:`STOP_RETRIES`; from the second, :data:`STOP_NOW_WAIT` for
both: a host that does not answer does not hold the stop for long, one merely slow still gets
the runs' ends; a run's end that could not be recorded then is said in one line. A signal
that comes once the drain is over, while the worker cleans up (its ``agent acp`` processes
stopped, its store closed), is logged
("already stopping: finishing cleanup") and the cleanup goes on; :func:`serve_worker`
tells its caller the first signal that stopped it, even when the worker then stopped with
an error (its command dies from it once done). **At
start** the worker stops what is left of the agent groups recorded by dead workers of this
host (checked by process start time, :func:`~.procs.stop_recorded_group`) and marks their
runs ``interrupted``. **A schema
upgraded under it** by a newer version (seen at a heartbeat: :meth:`Worker._check_schema`)
stops it as SIGTERM does, its runs' reason and its last line saying why.

Example:
    >>> default_worker_name().count("-") >= 1
    True
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..server_options import LONGEST_STALLED_AFTER
from .dispatch import CancelNotAppliedError, run_ends
from .dispatch.answers import AnswerListener
from .dispatch.jobs import DEFAULT_QUEUE, TASK_NAME, make_app, worker_queue
from .dispatch.queue import interrupt_lost_run
from .dispatch.worker_logs import lost_task_errors, one_line_queue_errors
from .hub import Hub
from .log import EventLog
from .models import RunStatus
from .procs import identity_alive, server_identity, stop_recorded_group
from .requests import AnswerIn
from .runs import ActiveRun, RunManager, RunNotActiveError
from .security import WorkspaceError, resolve_workspace
from .settings import ServerSettings
from .store import RunEndedError, Store, describe_error, is_transient
from .store.errors import SchemaTooNewError
from .worktrees import WorktreeError, chat_worktree

logger = logging.getLogger("cursor_agent_api.worker")

STOP_WAIT = 5.0
"""Once the worker stops (its first signal): seconds each database query may wait at most,
the job queue's (those in flight included: Procrastinate's last fetch, its LISTEN connection,
its unregistration) and the store's. A host that does not answer held the stop up to the
queue's whole bound (70 s) per query, and the store's a minute per statement
(:meth:`Worker._give_up`)."""
STOP_RETRIES = 30.0
"""Once the worker stops (its first signal): seconds a run's events and its end are retried
(each try :data:`STOP_WAIT` at most) before they are given up in one line: a database merely
slow (a table locked 12 s) still gets them (review 44: one 5 s try lost a run's end), one
that does not answer holds the stop this long per write."""
STOP_NOW_WAIT = 1.0
"""Once a second signal stops the runs at once: seconds every query may wait, and a write
is retried, at most: the worker ends at once."""


def default_worker_name() -> str:
    """``<host>-<pid>``: unique on a machine; ``--name`` gives a stable one."""
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True)
class WorkerSettings:
    """What ``cursor-agent-api worker`` is told. ``server`` carries the agent's settings
    (binary, environment, timeouts, roots, batching) as for ``serve``."""

    server: ServerSettings
    name: str = field(default_factory=default_worker_name)
    concurrency: int = 4
    queues: tuple[str, ...] = (DEFAULT_QUEUE,)
    heartbeat: float = 10.0
    stalled_after: float = LONGEST_STALLED_AFTER
    """Seconds without a heartbeat after which a worker that starts deletes another's row
    (Procrastinate's prune): the longest ``serve --stalled-after``, so that it never deletes
    one the API servers still take for alive (a worker without its row is lost to them at
    once). The API servers' own ``--stalled-after`` decides when a worker is lost."""
    shutdown_grace: float = 10.0
    abort_poll: float = 2.0
    job_poll: float = 5.0
    """Seconds between two fetches of new jobs when no notification came (Procrastinate's
    LISTEN connection takes each new job at once; the poll backs up a missed one)."""
    worktrees: Path | None = None
    """``--worktrees DIR``: each chat of a git repository works in its own worktree there
    (:mod:`.worktrees`)."""


class _WorkerRuns(RunManager):
    """The server's run manager, as a worker's: a stop at shutdown is the worker's."""

    def streaming(self) -> list[str]:
        """The runs whose agent runs now (not starting, not ending)."""
        return [run_id for run_id, active in self._active.items() if active.phase == "streaming"]

    stop_reason = "the run was stopped because its worker shut down"
    """The error of the runs a stop ends (the schema upgraded under the worker: that)."""

    gives_up_within: float | None = None
    """Once the worker stops (:meth:`Worker._give_up`): each query's bound; a run's events
    and end are then retried :data:`STOP_RETRIES` (:data:`STOP_NOW_WAIT` after a second
    signal), not the grace, which may be an hour (the API servers' sweep marks a run whose end
    its worker could not record ``interrupted``)."""

    def _end_retries_within(self) -> float:
        if self.gives_up_within is None:
            return super()._end_retries_within()
        return self.gives_up_within if self.gives_up_within <= STOP_NOW_WAIT else STOP_RETRIES

    def _stopped_error(self, active: ActiveRun) -> str | None:  # type: ignore[override]
        if active.shutdown and not active.cancel_requested:
            return self.stop_reason
        return None


class WorkerLostError(RuntimeError):
    """This worker's row in the job queue is gone (pruned by a worker that started, or deleted
    by hand): the API servers took it for lost and interrupted its runs; it cannot take a job
    any more (Procrastinate's fetch fails on the missing row). It stops, saying so.

    Example:
        >>> print(WorkerLostError.for_worker("build-1"))  # doctest: +ELLIPSIS
        worker build-1 was declared lost: its row in the job queue was deleted ... start it again
    """

    @classmethod
    def for_worker(cls, name: str) -> WorkerLostError:
        return cls(  # (short: a worker's last line; docs/distributed.md says the rest)
            f"worker {name} was declared lost: its row in the job queue was deleted while it "
            "was silent (paused or cut off), so its runs were interrupted and it can take no "
            "job; start it again"
        )


@dataclass
class _Stop:
    """A job of this worker: the stop asked for its run (``user``: a cancel), its ids."""

    user: bool = False
    shutdown: bool = False
    job_id: int | None = None
    worker_id: int | None = None


class Worker:
    """One worker process (see the module doc)."""

    def __init__(self, settings: WorkerSettings) -> None:
        self.settings = settings
        s = settings.server
        self.store = Store(s.database_url, busy_timeout=s.store_busy_timeout,
                           connect_timeout=s.store_connect_timeout,
                           statement_timeout=s.store_statement_timeout)
        # Nobody subscribes here: the API servers' relays publish what the worker commits.
        self.log = EventLog(self.store, Hub(), s.max_field_bytes)
        self.runs = _WorkerRuns(s, self.log)
        self.identity = server_identity()
        self.app = make_app(s.database_url, max_size=max(4, settings.concurrency + 2),
                            connect_timeout=s.store_connect_timeout,
                            statement_timeout=s.store_statement_timeout)
        self.app.task(name=TASK_NAME, pass_context=True)(self._job)
        self.registered: int | None = None
        """Procrastinate's id of this worker, once registered (its row is checked at each
        beat: :meth:`_check_registered`)."""
        manager = self.app.job_manager
        register, unregister = manager.register_worker, manager.unregister_worker

        async def registered() -> int:  # Procrastinate registers it as its worker starts
            self.registered = int(await register())
            return self.registered

        async def unregistered(worker_id: int) -> None:  # ... and unregisters it as it ends
            self.registered = None  # (its row gone then is no news)
            await unregister(worker_id)

        manager.register_worker, manager.unregister_worker = registered, unregistered
        self.declared_lost: WorkerLostError | None = None
        """Set when this worker's row was found gone (it then stops, saying so)."""
        self._stops: dict[str, _Stop] = {}
        self._shutdown: asyncio.Task[None] | None = None
        self._taking: asyncio.Task[None] | None = None  # Procrastinate's worker
        self._draining = False
        self._cleaning = False  # (set as the cleanup begins)
        self.schema_moved: SchemaTooNewError | None = None
        """Set when a newer version upgraded the schema under this worker (it then stops)."""
        self._tasks: set[asyncio.Task[None]] = set()
        self.on_ready: Callable[[], None] | None = None
        self.stopped_by: signal.Signals | None = None
        """The first signal that stopped it (its command dies from it once done)."""

    @property
    def queues(self) -> list[str]:
        """The shared queues and this worker's affinity queue."""
        return [*self.settings.queues, worker_queue(self.settings.name)]

    async def run(self) -> None:
        """Open the store and the queue, clean up after dead workers, work until stopped
        (:meth:`stop`: SIGTERM or SIGINT)."""
        s = self.settings
        try:
            await self.store.start()
        except BaseException:  # failed, or cancelled (a signal during the migrations)
            await self.store.close()  # what it opened (the engine, its connections)
            raise
        # ACP runs' answers, from API servers
        answers = AnswerListener(self.store, self._answer, ping_interval=s.server.notify_poll_interval)
        # From the drain's start to the cleanup's end: a signal during the cleanup is only
        # said (stop()), a repeated SIGTERM does not end the worker half cleaned up.
        signals = contextlib.ExitStack()
        try:
            await answers.start()
            async with self.app.open_async():
                await self.recover()
                # The signals are ours (install_signal_handlers=False): Procrastinate's stop
                # ends its heartbeats and abort polling before it waits for the jobs (_drain).
                self._taking = asyncio.create_task(
                    self.app.run_worker_async(
                        queues=self.queues,
                        name=s.name,
                        concurrency=s.concurrency,
                        update_heartbeat_interval=s.heartbeat,
                        stalled_worker_timeout=s.stalled_after,
                        shutdown_graceful_timeout=s.shutdown_grace,
                        abort_job_polling_interval=s.abort_poll,
                        fetch_job_polling_interval=s.job_poll,
                        delete_jobs="successful",
                        install_signal_handlers=False,
                    ),
                    name="procrastinate-worker",
                )
                self._spawn(self._beat(), "heartbeats")
                signals.enter_context(_signals(self._signalled))
                try:
                    if self.on_ready is not None:
                        self.on_ready()
                    await asyncio.wait([self._taking])
                except BaseException:  # run() leaves early, raising this
                    await self._stop_taking(early=True)
                    raise
                await self._stop_taking()
                failed = None if self._taking.cancelled() else self._taking.exception()
                if failed is not None:
                    # its fetch of a job failed on its missing row (a ForeignKeyViolation): say why
                    if self.declared_lost is None and _fetched_unregistered(failed):
                        self.declared_lost = WorkerLostError.for_worker(s.name)
                    if self.declared_lost is not None:
                        raise self.declared_lost from failed
                    raise failed
                if self.declared_lost is not None:
                    raise self.declared_lost
                if self.schema_moved is not None:
                    raise self.schema_moved
        finally:
            self._cleaning = True
            with signals:
                for task in list(self._tasks):
                    task.cancel()
                await asyncio.gather(*self._tasks, return_exceptions=True)
                await answers.close()
                await self.runs.acp_clients.aclose()  # the shared `agent acp` processes
                await self.store.close()

    async def _stop_taking(self, *, early: bool = False) -> None:
        """Procrastinate's worker ends before the queue closes: when :meth:`run` leaves
        ``early`` (``on_ready`` failed: its stdout closed; or it was cancelled), it drains as
        at SIGTERM, without the signal's line (none came) (it used to start only then, its
        queue already closed: it failed, its failure never retrieved). Its failure is then
        said in one line: :meth:`run` raises what made it leave."""
        assert self._taking is not None
        if not self._taking.done():
            if not self._draining:
                self._drain()
            await asyncio.wait([self._taking])
        if self._shutdown is not None:
            await asyncio.gather(self._shutdown, return_exceptions=True)
        failed = None if self._taking.cancelled() else self._taking.exception()
        if failed is not None and early:
            logger.warning("the queue's worker failed as it stopped: %s", describe_error(failed))

    @property
    def draining(self) -> bool:
        """Whether :meth:`stop` was called (no new job is taken)."""
        return self._draining

    def stop(self) -> None:
        """Stop the worker: the first call drains (no new job; the runs get
        ``--shutdown-grace`` seconds to end), the next stops the runs at once
        (``interrupted``); a call once they are being stopped, or once the drain is over
        (the worker cleans up: its ``agent acp`` processes stopped, its store closed), only
        says so. SIGTERM, SIGINT and SIGHUP call it (on the worker's event loop), until the
        cleanup has ended.

        Example:
            >>> import asyncio
            >>> from cursor_agent_api.server.settings import ServerSettings
            >>> async def demo() -> bool:
            ...     url = "postgresql+asyncpg://u@127.0.0.1/db"  # not connected to here
            ...     worker = Worker(WorkerSettings(server=ServerSettings(database_url=url)))
            ...     worker.stop()  # nothing runs: nothing to wait for
            ...     return worker.draining
            >>> asyncio.run(demo())
            True
        """
        if self._cleaning or (self._taking is not None and self._taking.done()):
            # the drain is over (the runs ended or were stopped): nothing to start now
            logger.warning("already stopping: finishing cleanup")
        elif not self._draining:
            logger.warning(
                "stopping: no new run is taken; waiting up to %g s for %d run(s) to end "
                "(the same signal again stops them now)",
                self.settings.shutdown_grace,
                len(self._stops),
            )
            self._drain()
        elif self._shutdown is None:
            logger.warning("stopping now: the runs still going are stopped (interrupted)")
            self._give_up(STOP_NOW_WAIT)
            for stop in self._stops.values():
                stop.shutdown = True
            self._shutdown = asyncio.create_task(self.runs.shutdown())
        else:
            logger.warning("already stopping the runs")

    def _signalled(self, signum: int) -> None:
        """SIGTERM, SIGINT or SIGHUP: :meth:`stop`; the first is kept (:attr:`stopped_by`)."""
        if self.stopped_by is None:
            self.stopped_by = signal.Signals(signum)
        self.stop()

    def _drain(self) -> None:
        """The drain (:meth:`stop`'s first call, or :meth:`run` leaving early): no new job
        is taken (Procrastinate's graceful stop); cancels are still taken meanwhile."""
        self._draining = True
        self._give_up(STOP_WAIT)
        self._spawn(self._poll_aborts(), "cancels")
        if self._taking is not None:
            self._taking.cancel()  # Procrastinate's graceful stop

    def _give_up(self, seconds: float) -> None:
        """Every database query from now on (the queue's in flight too) waits ``seconds``
        at most: a stop is not held by a host that does not answer (a query it answers
        takes milliseconds)."""
        self.app.connector.give_up_within(seconds)
        self.store.give_up_within(seconds)
        self.runs.gives_up_within = min(seconds, self.runs.gives_up_within or seconds)

    def _spawn(self, coro: Any, name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _beat(self) -> None:
        """Heartbeats while this worker has jobs, besides Procrastinate's: its stop (ours, or
        its own when its LISTEN connection fails) ends them before it waits for the jobs, and
        an API server would declare this worker lost while its runs go on (freeing their
        chats). One more small UPDATE per interval. Each beat also stops the agent of a run
        ended elsewhere (:meth:`_stop_runs_ended_elsewhere`)."""
        jobs = self.app.job_manager
        while self._taking is not None and not self._taking.done():
            ids = {stop.worker_id for stop in self._stops.values() if stop.worker_id is not None}
            try:
                for worker_id in ids:  # one: this worker's
                    await jobs.update_heartbeat(worker_id)
                await self._stop_runs_ended_elsewhere()
                await self._check_schema()
                await self._check_registered()
            except Exception as e:  # the database may be away for a while: try again later
                logger.warning("a heartbeat failed: %s", describe_error(e))
            await asyncio.sleep(self.settings.heartbeat)

    async def _check_schema(self) -> None:
        """At each beat: when a newer version upgraded the schema under this worker (its
        writes may fail from now on: a run that never ends), stop as at SIGTERM (no new job;
        the runs get ``--shutdown-grace`` seconds, then end ``interrupted`` with the reason),
        and exit with that reason as the last line."""
        if self.schema_moved is not None:
            return
        revision = await self.store.schema_past_ours()
        if revision is None:
            return
        self.schema_moved = SchemaTooNewError(
            f"the database was upgraded by a newer cursor-agent-api (schema {revision}) while "
            "this worker ran: upgrade it (docs/distributed.md: Upgrading a cluster)")
        self.runs.stop_reason = (f"the run was stopped because its worker's database was upgraded "
                                 f"by a newer cursor-agent-api (schema {revision})")
        logger.error("%s; stopping", self.schema_moved)
        if not self._draining:  # (already stopping: not a second stop, which is "at once")
            self.stop()

    async def _check_registered(self) -> None:
        """At each beat: when this worker's row is gone (a worker that started pruned it
        while this one was silent: the API servers declared it lost and interrupted its
        runs, whose agents :meth:`_stop_runs_ended_elsewhere` stopped), stop as at SIGTERM
        and exit with that reason as the last line: unregistered, it would take no job (its
        next fetch failed on the missing row, a ForeignKeyViolation that said nothing)."""
        worker_id = self.registered
        if self.declared_lost is not None or worker_id is None or self._draining:
            return
        if await self.store.worker_alive(worker_id, None) or self.registered is None:
            return  # (registered, or unregistered by its own end meanwhile)
        self.declared_lost = WorkerLostError.for_worker(self.settings.name)
        logger.error("%s; stopping", self.declared_lost)
        if not self._draining:
            self.stop()

    async def _stop_runs_ended_elsewhere(self) -> None:
        """Stop the agent of a run of this worker that the store says is over: an API server
        declared this worker lost (its heartbeats did not reach the database for
        ``--stalled-after`` seconds) and freed the chat, where another agent may run now.
        Its end here is not recorded (the first end stays)."""
        for run_id in self.runs.streaming():
            row = await self.store.get_run(run_id)
            if row is None or not RunStatus(row["status"]).final or not self.runs.is_active(run_id):
                continue
            logger.warning(
                "run %s was marked %s elsewhere (%s) while its agent ran here: the agent is stopped",
                run_id,
                row["status"],
                row.get("error"),
            )
            stop = self._stops.get(run_id)
            if stop is not None:
                stop.user = True
            with contextlib.suppress(RunNotActiveError):
                await self.runs.cancel(run_id, wait=0)

    async def _poll_aborts(self) -> None:
        """Once stopping: take the cancels (aborts) Procrastinate no longer polls for."""
        jobs = self.app.job_manager
        while self._taking is not None and not self._taking.done():
            await asyncio.sleep(self.settings.abort_poll)
            if not self._stops:
                continue
            try:
                wanted = set(await jobs.list_jobs_to_abort_async())
            except Exception as e:
                logger.warning("polling cancels failed while stopping: %s", describe_error(e))
                continue
            for run_id, stop in list(self._stops.items()):
                if stop.job_id in wanted and not stop.user:
                    stop.user = True
                    with contextlib.suppress(RunNotActiveError):  # not started yet, or just ended
                        await self.runs.cancel(run_id, wait=0)

    async def _answer(self, run_id: str, request_id: str, body: AnswerIn) -> None:
        """An answer an API server relayed: taken if this worker runs the run."""
        if self.runs.is_active(run_id):
            await self.runs.answer(run_id, request_id, body)

    async def recover(self) -> list[str]:
        """Stop the agent groups of dead workers of this host; mark their runs interrupted."""
        marked: list[str] = []
        for run in await self.store.local_runs(socket.gethostname()):
            owner = run.get("server_id")
            if not owner or identity_alive(str(owner)) is not False:
                continue  # a live process of this host owns it
            if run.get("pgid"):
                found = await stop_recorded_group(int(run["pgid"]), run.get("proc_start"))
                if found:
                    logger.warning("stopped %d leftover process(es) of run %s", found, run["id"])
            if await interrupt_lost_run(self.log, run):
                marked.append(str(run["id"]))
            if run.get("job_id") is not None:
                with contextlib.suppress(Exception):  # the chat's lock is released
                    from procrastinate.jobs import Status

                    await self.app.job_manager.finish_job_by_id_async(
                        job_id=int(run["job_id"]), status=Status.FAILED, delete_job=False
                    )
        return marked

    # ---- one job ---------------------------------------------------------------------

    async def _job(self, context: Any, run_id: str) -> str:
        """The task: execute run ``run_id``; an abort (cancel or shutdown) stops it."""
        stop = self._stops.setdefault(run_id, _Stop())
        stop.job_id, stop.worker_id = context.job.id, context.job.worker_id
        body = asyncio.create_task(self._execute(context, run_id, stop), name=f"job-{run_id}")
        try:
            try:
                return await asyncio.shield(body)
            except asyncio.CancelledError:  # Procrastinate aborts the job: stop the run, record it
                if body.done():
                    _retrieve(body)
                    raise
                # The job ends once its run has: Procrastinate's stop waits for its jobs, the
                # cleanup for its stop. Aborted again meanwhile (its stop, the grace over, while
                # a user's cancel waits up to 15 s for an agent that does not end): every run
                # is stopped now, as by a second signal.
                stopping = asyncio.create_task(self._stop(context, run_id, stop))
                while not (stopping.done() and body.done()):
                    try:
                        await asyncio.wait([stopping, body])
                    except asyncio.CancelledError:
                        self._stop_now(stop)
                _retrieve(body)
                stopping.result()
                raise  # the job ends "aborted"
        finally:
            self._stops.pop(run_id, None)

    async def _stop(self, context: Any, run_id: str, stop: _Stop) -> None:
        from procrastinate.job_context import AbortReason

        if stop.user or context.abort_reason() is AbortReason.USER_REQUEST:
            stop.user = True
            # it may have just ended; or not be marked within the wait (the job then goes on
            # waiting for the run's task, which the cancel ends)
            with contextlib.suppress(RunNotActiveError, CancelNotAppliedError):
                await self.runs.cancel(run_id)
        else:
            self._stop_now(stop)

    def _stop_now(self, stop: _Stop) -> None:
        """Stop every run still going (marked interrupted; one a user cancelled: cancelled),
        once; :meth:`run` waits for it."""
        stop.shutdown = True
        if self._shutdown is None:
            self._shutdown = asyncio.create_task(self.runs.shutdown())

    async def _execute(self, context: Any, run_id: str, stop: _Stop) -> str:
        try:
            return await self._claim_and_run(context, run_id, stop)
        except Exception as e:
            # No run stays running forever because of a failure here (its job is over, so
            # nothing would take it again): record it as failed, if it is not over. A run
            # still queued (the claim itself failed: nothing of it ran) is left queued: the
            # API servers' sweep gives it a new job (docs/distributed.md, "When things fail").
            run = None
            with contextlib.suppress(Exception):
                run = await self.store.get_run(run_id)
            if run is not None and run["status"] == RunStatus.QUEUED.value and is_transient(e):
                # the database failed the claim: one line (no SQL, no values), nothing lost
                logger.warning("run %s was not claimed by this worker (%s): it stays queued, "
                               "for a new job", run_id, describe_error(e))
            else:
                logger.exception("run %s could not be run on this worker", run_id)
            with contextlib.suppress(Exception):
                if run is not None:
                    await run_ends.finish_if_active(
                        self.log,
                        run,
                        RunStatus.FAILED.value,
                        only=(RunStatus.RUNNING.value,),
                        error=f"worker {self.settings.name} could not run it: {describe_error(e)}",
                        error_type=type(e).__name__,
                    )
            raise

    async def _refuse(self, run: dict[str, Any], error: str, error_type: str, outcome: str) -> str:
        """Fail a claimed run this worker cannot run (``error`` says why); ``outcome`` back."""
        await run_ends.finish_if_active(self.log, run, RunStatus.FAILED.value, error=error,
                                        error_type=error_type)
        return outcome

    async def _claim_and_run(self, context: Any, run_id: str, stop: _Stop) -> str:
        job = context.job
        if self._draining:  # fetched as the stop began: the API servers' sweep gives it a new job
            return "left queued: the worker is stopping"
        run = await self.store.claim_run(
            run_id,
            server_id=self.identity,
            worker=self.settings.name,
            worker_id=job.worker_id,
            job_id=job.id,
            queue=job.queue,
        )
        if run is None:
            return "not queued any more"
        chat = await self.store.get_chat(str(run["chat_id"]))
        assert chat is not None  # a chat is not deleted while its run's job is held
        try:
            workspace = resolve_workspace(str(chat["workspace"]), self.settings.server.roots,
                                          worker=self.settings.name)
        except WorkspaceError as e:
            roots = ", ".join(str(r) for r in self.settings.server.roots)
            error = str(e) if e.outside else f"{e} on worker {self.settings.name} (its roots: {roots})"
            return await self._refuse(run, error, "WorkspaceError", "workspace refused")
        if self.settings.worktrees is not None:
            try:
                tree = await asyncio.to_thread(
                    chat_worktree, workspace, str(chat["id"]), self.settings.worktrees
                )
            except WorktreeError as e:
                return await self._refuse(run, f"{e} (worker {self.settings.name})", "WorktreeError",
                                          "worktree refused")
            workspace = tree or workspace
        chat = {**chat, "workspace": str(workspace)}
        previous = await self.store.previous_worker_run(str(chat["id"]), run_id)
        if chat.get("session_id") and previous is not None and previous.get("worker") != self.settings.name:
            try:
                await run_ends.reset_context(self.log, chat, run_id, previous)
            except RunEndedError:  # an API server ended it since the claim (a sweep)
                return await self._ended_before_start(run_id)
            chat = {**chat, "session_id": None}
        if stop.user or stop.shutdown:
            status = RunStatus.CANCELLED if stop.user else RunStatus.INTERRUPTED
            await run_ends.finish_if_active(
                self.log,
                run,
                status.value,
                error=None if stop.user else "the run was stopped because its worker shut down",
            )
            return status.value
        task = self.runs.start(run, chat)
        if self._shutdown is not None:  # pragma: no cover - a stop raced the start
            await self.runs.shutdown()
        elif stop.user:  # pragma: no cover - a cancel raced the start
            with contextlib.suppress(RunNotActiveError):
                await self.runs.cancel(run_id, wait=0)
        await task
        if self._draining:  # (its end recorded, or said not to be: the database is not asked)
            return "ended as the worker stopped"
        fresh = await self.store.get_run(run_id)
        return str(fresh["status"]) if fresh else "gone"

    async def _ended_before_start(self, run_id: str) -> str:
        """A run claimed here that another process ended before its start (its writes are
        refused): left as it is, its agent not started. Its status."""
        row = await self.store.get_run(run_id)
        status = str(row["status"]) if row else "gone"
        logger.warning("run %s is already %s (ended by another process): its agent is not started",
                       run_id, status)
        return status


def _fetched_unregistered(error: BaseException) -> bool:
    """Whether ``error``, which ended Procrastinate's worker, is its fetch of a job failing on
    this worker's missing row in ``procrastinate_workers`` (the job's ``worker_id`` foreign
    key: a ``ForeignKeyViolation``, maybe wrapped by Procrastinate).

    Example:
        >>> _fetched_unregistered(RuntimeError("no"))
        False
    """
    seen: BaseException | None = error
    for _ in range(10):  # (a chain of causes, never a loop)
        if seen is None:
            return False
        if type(seen).__name__ == "ForeignKeyViolation" and "procrastinate_jobs_worker_id_fkey" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _retrieve(body: asyncio.Task[str]) -> None:
    """A job's run, ended as its job is aborted: its failure (logged by
    :meth:`Worker._execute`) is retrieved, not reported again as never retrieved."""
    if not body.cancelled():
        body.exception()


@contextlib.contextmanager
def _signals(handler: Callable[[int], None]) -> Iterator[None]:
    """SIGTERM, SIGINT and SIGHUP (its terminal or SSH session closed; not when it was
    started to ignore it: ``nohup``) call ``handler`` with the signal's number (on the
    running loop) while inside; nothing where the loop cannot take signals (not the main
    thread). The signals' wakeup file descriptor its caller had set (the command's, that
    wakes the loop whichever thread takes a signal:
    :class:`~cursor_agent_api.signal_exit.SignalWake`) is set
    back after (the loop's own handlers set theirs, then none)."""
    loop = asyncio.get_running_loop()
    try:
        waking = signal.set_wakeup_fd(-1)  # (at once the loop's, as its handlers are added)
    except ValueError:  # not the main thread: no signals here
        waking = -1
    installed = []
    hangup = [] if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN else [signal.SIGHUP]
    for signum in (signal.SIGTERM, signal.SIGINT, *hangup):
        try:
            loop.add_signal_handler(signum, handler, signum)
        except (ValueError, RuntimeError, NotImplementedError):
            continue
        installed.append(signum)
    try:
        yield
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)
        if waking != -1:
            signal.set_wakeup_fd(waking, warn_on_full_buffer=False)


async def serve_worker(settings: WorkerSettings, on_ready: Callable[[], None] | None = None,
                       on_signal: Callable[[signal.Signals], None] | None = None) -> None:
    """Run a worker until it is stopped (SIGTERM, SIGINT or SIGHUP); its database's failures
    are logged one line each (:mod:`.dispatch.worker_logs`). ``on_signal`` is told the first
    signal that stopped it, if one did, once the worker is done, even when it then stopped
    with an error (its drain's database lost): its command dies from that signal (as every
    command stopped by a signal: a shell loop around it stops)."""
    one_line_queue_errors(settings.name)
    asyncio.get_running_loop().set_exception_handler(lost_task_errors)
    worker = Worker(settings)
    worker.on_ready = on_ready
    try:
        await worker.run()
    finally:
        if worker.stopped_by is not None and on_signal is not None:
            on_signal(worker.stopped_by)
