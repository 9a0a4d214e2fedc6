"""The distributed queue's SQL: a worker's claim of a queued run, and the questions the
dispatcher asks about runs and workers (Procrastinate's ``procrastinate_workers`` table
holds each worker's heartbeat, ``procrastinate_jobs`` the jobs). Ending a run only while
it is still active is :meth:`~.runs.RunRows.end_run`.

Example:
    >>> import asyncio, tempfile
    >>> from cursor_agent_api.server.store import NewRecord, Store
    >>> async def demo() -> tuple[dict[str, int], str, bool]:
    ...     store = Store(f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/db.sqlite3")
    ...     await store.start()
    ...     chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
    ...     queued = lambda r: NewRecord("server", "run", "queued", {})
    ...     run, _ = await store.create_run(chat["id"], "hi", queued)
    ...     counts = await store.run_counts()
    ...     claimed = await store.claim_run(run["id"], worker="w1")
    ...     again = await store.claim_run(run["id"], worker="w2")  # not queued any more
    ...     await store.close()
    ...     return counts, claimed["worker"], again is None
    >>> asyncio.run(demo())
    ({'running': 0, 'queued': 1}, 'w1', True)
"""

from __future__ import annotations

from typing import Any, NamedTuple

from sqlalchemy import and_, desc, func, literal_column, or_, select, text, true, update
from sqlalchemy.sql.elements import ColumnElement, Label, TextClause

from ..models import ACTIVE_STATUSES, runs
from .engine import StoreEngine
from .keys import _row_dict

_GONE = text(
    "NOT EXISTS (SELECT 1 FROM procrastinate_workers w WHERE w.id = runs.worker_id "
    "AND w.last_heartbeat > now() - make_interval(secs => :within))"
)

_JOB_OVER = text(
    "NOT EXISTS (SELECT 1 FROM procrastinate_jobs j WHERE j.id = runs.job_id "
    "AND j.status IN ('todo', 'doing', 'aborting'))"
)
"""The run's job is over (succeeded, failed, cancelled, aborted) or gone: no worker will take
the run through it."""

_JOBS_OVER = text(
    "EXISTS (SELECT 1 FROM procrastinate_jobs j WHERE j.args->>'run_id' = runs.id) "
    "AND NOT EXISTS (SELECT 1 FROM procrastinate_jobs j WHERE j.args->>'run_id' = runs.id "
    "AND j.status IN ('todo', 'doing', 'aborting'))"
)
"""For a run whose job id was never recorded (the API server's write failed after the job was
deferred): it had jobs, and every one is over."""

_CANCEL_REACHED: Label[bool] = literal_column(
    "EXISTS (SELECT 1 FROM procrastinate_events e WHERE e.job_id = runs.job_id "
    "AND e.type = 'abort_requested')"
).label("cancel_requested")
"""A cancel reached the run's job (``cancel_job_by_id(abort=True)``; Procrastinate keeps the
event: the job's own flag is reset when it ends)."""

_JOB_COUNT: Label[int] = literal_column(
    "(SELECT count(*) FROM procrastinate_jobs j WHERE j.args->>'run_id' = runs.id)"
).label("job_count")

_JOB_ENDED_BEFORE = text(
    "NOT EXISTS (SELECT 1 FROM procrastinate_jobs j WHERE j.id = runs.job_id "
    "AND j.status IN ('todo', 'doing', 'aborting')) "
    "AND NOT EXISTS (SELECT 1 FROM procrastinate_events e WHERE e.job_id = runs.job_id "
    "AND e.at > now() - make_interval(secs => :grace))"
)
"""The run's job is over (or gone), and nothing happened to it for ``grace`` seconds."""

_NO_JOB = text("NOT EXISTS (SELECT 1 FROM procrastinate_jobs j WHERE j.args->>'run_id' = runs.id)")


class OrphanedRun(NamedTuple):
    """A queued run whose job is over (:meth:`QueueRows.orphaned_runs`)."""

    run: dict[str, Any]
    cancel_requested: bool
    """A cancel reached its job."""
    jobs: int
    """The jobs that carried it so far."""


class QueueRows(StoreEngine):
    """The distributed queue's reads and writes of :class:`~cursor_agent_api.server.store.Store`."""

    async def claim_run(self, run_id: str, **owner: Any) -> dict[str, Any] | None:
        """Move the run from ``queued`` to ``running`` for a worker (``owner``: ``server_id``,
        ``worker``, ``worker_id``, ``job_id``, ``queue``), atomically; ``None`` if it was not
        queued any more (cancelled meanwhile), or if the claiming job is older than the run's:
        a sweep gave the run a new job after finishing that one (its worker had stopped
        sending heartbeats, and was only slow). A newer job may claim it (deferred by a sweep
        that has not recorded it yet: job ids grow)."""
        job = owner.get("job_id")
        current_job = or_(runs.c.job_id.is_(None), runs.c.job_id <= job) if job is not None else true()
        async with self.transaction() as conn:
            res = await conn.execute(
                update(runs)
                .where(and_(runs.c.id == run_id, runs.c.status == "queued", current_job))
                .values(status="running", **owner)
                .returning(*runs.c)
            )
            row = res.first()
        return _row_dict(row)

    async def previous_worker_run(self, chat_id: str, run_id: str) -> dict[str, Any] | None:
        """The chat's latest run, other than ``run_id``, that a worker took."""
        async with self.connect() as conn:
            res = await conn.execute(
                select(runs)
                .where(and_(runs.c.chat_id == chat_id, runs.c.id != run_id, runs.c.worker.is_not(None)))
                .order_by(desc(runs.c.created_ms), desc(runs.c.id))
                .limit(1)
            )
            return _row_dict(res.first())

    async def worker_alive(self, worker_id: int, within: float | None) -> bool:
        """Has Procrastinate's worker ``worker_id`` sent a heartbeat in the last ``within`` s?
        (``None``: is it registered at all: its row not pruned, not unregistered?)"""
        sql = "SELECT 1 FROM procrastinate_workers WHERE id = :id"
        if within is not None:
            sql += " AND last_heartbeat > now() - make_interval(secs => :within)"
        async with self.connect() as conn:
            res = await conn.execute(text(sql), {"id": worker_id, "within": within})
            return res.first() is not None

    async def worker_counts(self, within: float) -> dict[str, int]:
        """``{"alive": n, "stalled": m}``: Procrastinate's registered workers that sent a
        heartbeat in the last ``within`` s, and the others (lost, until a starting worker
        prunes them, an hour after their last heartbeat). One small count: a row per registered worker."""
        async with self.connect() as conn:
            res = await conn.execute(
                text(
                    "SELECT count(*) FILTER (WHERE last_heartbeat > now() - make_interval(secs => :within)), "
                    "count(*) FILTER (WHERE last_heartbeat <= now() - make_interval(secs => :within)) "
                    "FROM procrastinate_workers"
                ),
                {"within": within},
            )
            alive, stalled = res.one()
            return {"alive": int(alive), "stalled": int(stalled)}

    async def _runs_where(self, *conditions: ColumnElement[bool] | TextClause) -> list[dict[str, Any]]:
        """The runs that meet every condition, oldest first."""
        async with self.connect() as conn:
            res = await conn.execute(select(runs).where(and_(*conditions)).order_by(runs.c.created_ms))
            return [dict(r._mapping) for r in res]

    async def stranded_runs(self, within: float) -> list[dict[str, Any]]:
        """Queued runs waiting in the affinity queue of a worker that is gone."""
        return await self._runs_where(runs.c.status == "queued", runs.c.queue.like("worker.%"),
                                      runs.c.job_id.is_not(None), _GONE.bindparams(within=within))

    async def orphaned_runs(self) -> list[OrphanedRun]:
        """Queued runs whose job is over or gone, although no worker took the run (a move off a
        dead worker's queue or a worker's claim failed halfway): no worker will take them
        through that job. Also a run with no job id recorded whose jobs are all over."""
        async with self.connect() as conn:
            res = await conn.execute(
                select(runs, _CANCEL_REACHED, _JOB_COUNT)
                .where(
                    and_(
                        runs.c.status == "queued",
                        or_(
                            and_(runs.c.job_id.is_not(None), _JOB_OVER),
                            and_(runs.c.job_id.is_(None), _JOBS_OVER),
                        ),
                    )
                )
                .order_by(runs.c.created_ms)
            )
            found = []
            for row in res:
                fields = dict(row._mapping)
                cancel_requested = bool(fields.pop("cancel_requested"))
                jobs = int(fields.pop("job_count"))
                found.append(OrphanedRun(fields, cancel_requested, jobs))
            return found

    async def abandoned_runs(self, grace: float) -> list[dict[str, Any]]:
        """Running runs whose job ended (or is gone) over ``grace`` seconds ago: their worker
        gave up recording the end (the database refused it, or it was stopped first), and
        no worker will take the run again."""
        return await self._runs_where(runs.c.status == "running", runs.c.job_id.is_not(None),
                                      _JOB_ENDED_BEFORE.bindparams(grace=grace))

    async def requeue_run(self, run_id: str, behind_job: int | None, **placed: Any) -> bool:
        """Give a run its new job (``placed``: ``job_id``, ``queue``, ``worker``,
        ``worker_id``) if it is still queued behind job ``behind_job`` (``None``: no job
        recorded); False (nothing changed) if a worker took it meanwhile, it ended, or it
        has another job already."""
        behind = runs.c.job_id.is_(None) if behind_job is None else runs.c.job_id == behind_job
        where = and_(runs.c.id == run_id, runs.c.status == "queued", behind)
        async with self.transaction() as conn:
            res = await conn.execute(update(runs).where(where).values(**placed))
            return bool(res.rowcount)

    async def local_runs(self, host: str) -> list[dict[str, Any]]:
        """Active runs owned by a process of this host (``server_id`` ``host:pid:start``)."""
        async with self.connect() as conn:
            res = await conn.execute(
                select(runs).where(
                    and_(runs.c.status.in_(ACTIVE_STATUSES), runs.c.server_id.like(f"{host}:%"))
                )
            )
            return [dict(r._mapping) for r in res]

    async def run_counts(self) -> dict[str, int]:
        """``{"running": n, "queued": m}`` over the whole cluster."""
        async with self.connect() as conn:
            res = await conn.execute(
                select(runs.c.status, func.count())
                .where(runs.c.status.in_(ACTIVE_STATUSES))
                .group_by(runs.c.status)
            )
            counts = {str(k): int(v) for k, v in res}
        return {"running": counts.get("running", 0), "queued": counts.get("queued", 0)}

    async def unqueued_runs(self, created_before_ms: int) -> list[dict[str, Any]]:
        """Queued runs created before ``created_before_ms`` that no job carries: the API server
        that stored them stopped before it deferred their job. Only the queue's runs: a
        ``serve`` without ``--dispatch queue`` on the same database stores its runs with its
        own ``server_id`` (waiting under its ``--max-runs``, never given a job); a run for the
        queue has none until a worker claims it."""
        return await self._runs_where(runs.c.status == "queued", runs.c.job_id.is_(None),
                                      runs.c.server_id.is_(None),
                                      runs.c.created_ms < created_before_ms, _NO_JOB)
