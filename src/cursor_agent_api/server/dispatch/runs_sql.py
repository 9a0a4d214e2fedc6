"""The distributed mode's reads and writes of runs, on the server's store.

Kept apart from :mod:`..store` (whose writes are the single-process server's): claiming a
queued run for a worker, finishing a run only if it is still active (API servers and
workers may race to finish the same run: the first one wins, the others change nothing),
and the questions the dispatcher asks about workers (Procrastinate's ``procrastinate_workers``
table holds each worker's heartbeat).

Example:
    >>> lost_worker_note({"id": "r", "worker": "w1", "worker_id": 7, "last_seq": 12}, "gone").payload["seq"]
    12
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, desc, func, select, text, update

from ..log import EventLog
from ..models import ACTIVE_STATUSES, chats, runs
from ..runs import run_record
from ..store import NewRecord, Store, now_ms, write_turn
from ..turns import Changes, FoldedBatch, load_run_fold


class _NotActiveError(Exception):
    """The run was no longer in the expected status: roll the write back."""


async def claim_run(store: Store, run_id: str, **owner: Any) -> dict[str, Any] | None:
    """Move the run from ``queued`` to ``running`` for a worker (``owner``: ``server_id``,
    ``worker``, ``worker_id``, ``job_id``, ``queue``), atomically; ``None`` if it was not
    queued any more (cancelled meanwhile)."""
    async with store.transaction() as conn:
        res = await conn.execute(
            update(runs)
            .where(and_(runs.c.id == run_id, runs.c.status == "queued"))
            .values(status="running", **owner)
            .returning(*runs.c)
        )
        row = res.first()
    return dict(row._mapping) if row is not None else None


async def finish_if_active(
    log: EventLog,
    run: dict[str, Any],
    status: str,
    *,
    only: Sequence[str] = ACTIVE_STATUSES,
    error: str | None = None,
    error_type: str | None = None,
    notes: Sequence[NewRecord] = (),
) -> bool:
    """Record the end of ``run`` (``notes``, then its ``run/<status>`` record) if its status
    is still one of ``only``; False (nothing written) otherwise."""
    values: dict[str, Any] = {
        "status": status,
        "ended_ms": now_ms(),
        "error": error,
        "error_type": error_type,
    }
    run_id = str(run["id"])
    # the turn's state is closed as the run ends (calls left open abandoned), as RunManager does
    fold = await load_run_fold(log.store, str(run["chat_id"]), run_id)
    closing = fold.close()
    values["turn"] = fold.turn()
    changes: list[Changes] = [*(() for _ in notes), closing]

    async def before(conn: Any, recs: list[Any]) -> None:
        res = await conn.execute(
            update(runs)
            .where(and_(runs.c.id == run_id, runs.c.status.in_(tuple(only))))
            .values(**values, last_seq=recs[-1].seq)
        )
        if res.rowcount == 0:
            raise _NotActiveError(run_id)
        if closing:
            batch = FoldedBatch(fold.chat_id, run_id, [], changes, fold.errors, fold.turn())
            await write_turn(log.store, conn, batch, recs, log.max_field_bytes)

    final = {**run, **values}
    try:
        await log.append(
            str(run["chat_id"]), [*notes, run_record(status, final)], before=before, purpose="run_end",
            changes=changes,
        )
    except _NotActiveError:
        return False
    return True


def lost_worker_note(run: dict[str, Any], message: str) -> NewRecord:
    """The record saying which worker was lost, at which seq of the chat (``worker/lost``)."""
    return NewRecord(
        "server",
        "worker",
        "lost",
        {
            "worker": run.get("worker"),
            "worker_id": run.get("worker_id"),
            "owner": run.get("server_id"),
            "seq": run.get("last_seq"),
            "message": message,
        },
        None,
        str(run["id"]),
    )


async def previous_worker_run(store: Store, chat_id: str, run_id: str) -> dict[str, Any] | None:
    """The chat's latest run, other than ``run_id``, that a worker took."""
    async with store.engine.connect() as conn:
        res = await conn.execute(
            select(runs)
            .where(and_(runs.c.chat_id == chat_id, runs.c.id != run_id, runs.c.worker.is_not(None)))
            .order_by(desc(runs.c.created_ms), desc(runs.c.id))
            .limit(1)
        )
        row = res.first()
    return dict(row._mapping) if row is not None else None


_GONE = text(
    "NOT EXISTS (SELECT 1 FROM procrastinate_workers w WHERE w.id = runs.worker_id "
    "AND w.last_heartbeat > now() - make_interval(secs => :within))"
)


async def worker_alive(store: Store, worker_id: int, within: float) -> bool:
    """Has Procrastinate's worker ``worker_id`` sent a heartbeat in the last ``within`` s?"""
    async with store.engine.connect() as conn:
        res = await conn.execute(
            text(
                "SELECT 1 FROM procrastinate_workers WHERE id = :id "
                "AND last_heartbeat > now() - make_interval(secs => :within)"
            ),
            {"id": worker_id, "within": within},
        )
        return res.first() is not None


async def stranded_runs(store: Store, within: float) -> list[dict[str, Any]]:
    """Queued runs waiting in the affinity queue of a worker that is gone."""
    async with store.engine.connect() as conn:
        res = await conn.execute(
            select(runs)
            .where(
                and_(
                    runs.c.status == "queued",
                    runs.c.queue.like("worker.%"),
                    runs.c.job_id.is_not(None),
                    _GONE.bindparams(within=within),
                )
            )
            .order_by(runs.c.created_ms)
        )
        return [dict(r._mapping) for r in res]


async def local_runs(store: Store, host: str) -> list[dict[str, Any]]:
    """Active runs owned by a process of this host (``server_id`` ``host:pid:start``)."""
    async with store.engine.connect() as conn:
        res = await conn.execute(
            select(runs).where(and_(runs.c.status.in_(ACTIVE_STATUSES), runs.c.server_id.like(f"{host}:%")))
        )
        return [dict(r._mapping) for r in res]


async def run_counts(store: Store) -> dict[str, int]:
    """``{"running": n, "queued": m}`` over the whole cluster."""
    async with store.engine.connect() as conn:
        res = await conn.execute(
            select(runs.c.status, func.count())
            .where(runs.c.status.in_(ACTIVE_STATUSES))
            .group_by(runs.c.status)
        )
        counts = {str(k): int(v) for k, v in res}
    return {"running": counts.get("running", 0), "queued": counts.get("queued", 0)}


async def reset_context(log: EventLog, chat: dict[str, Any], run_id: str, previous: dict[str, Any]) -> None:
    """Start the chat afresh on this worker: forget its Cursor chat id, and say so in the log
    (``context/reset``: the worker that held the chat is gone)."""
    note = NewRecord(
        "server",
        "context",
        "reset",
        {
            "message": "context reset: the worker that held this chat's Cursor chat "
            f"({previous.get('worker')}) is gone; this turn starts a new Cursor chat",
            "previous_worker": previous.get("worker"),
            "previous_session_id": chat.get("session_id"),
        },
        None,
        run_id,
    )

    async def forget(conn: Any, _recs: list[Any]) -> None:
        await conn.execute(update(chats).where(chats.c.id == chat["id"]).values(session_id=None))

    await log.append(str(chat["id"]), [note], before=forget)


async def unqueued_runs(store: Store, created_before_ms: int) -> list[dict[str, Any]]:
    """Queued runs created before ``created_before_ms`` that no job carries: the API server
    that stored them stopped before it deferred their job."""
    async with store.engine.connect() as conn:
        res = await conn.execute(
            select(runs).where(
                and_(
                    runs.c.status == "queued",
                    runs.c.job_id.is_(None),
                    runs.c.created_ms < created_before_ms,
                    text("NOT EXISTS (SELECT 1 FROM procrastinate_jobs j WHERE j.args->>'run_id' = runs.id)"),
                )
            )
        )
        return [dict(r._mapping) for r in res]
