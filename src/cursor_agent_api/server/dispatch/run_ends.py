"""The distributed mode's ends of runs, through the log: finishing a run only if it is still
active (API servers and workers may race to finish the same run: the first one wins, the
others change nothing), the record of a lost worker, a chat's context reset on a new worker.
Their SQL is the store's (:mod:`..store.claims`, :meth:`~..store.runs.RunRows.end_run`).

Example:
    >>> lost_worker_note({"id": "r", "worker": "w1", "worker_id": 7, "last_seq": 12}, "gone").payload["seq"]
    12
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..log import EventLog
from ..models import ACTIVE_STATUSES
from ..runs import run_record
from ..store import NewRecord, now_ms, write_turn
from ..turns import Changes, FoldedBatch, load_run_fold


class _NotActiveError(Exception):
    """The run was no longer in the expected status: roll the write back."""


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
    store = log.store
    # the turn's state is closed as the run ends (calls left open abandoned), as RunManager does
    fold = await load_run_fold(store, str(run["chat_id"]), run_id)
    closing = fold.close()
    values["turn"] = fold.turn()
    changes: list[Changes] = [*(() for _ in notes), closing]

    async def before(conn: Any, recs: list[Any]) -> None:
        if not await store.end_run(conn, run_id, only=only, **values, last_seq=recs[-1].seq):
            raise _NotActiveError(run_id)
        if closing:
            batch = FoldedBatch(fold.chat_id, run_id, [], changes, fold.errors, fold.turn())
            await write_turn(store, conn, batch, recs, log.max_field_bytes)

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


async def reset_context(log: EventLog, chat: dict[str, Any], run_id: str, previous: dict[str, Any]) -> None:
    """Start the chat afresh on this worker: forget its Cursor chat id, and say so in the log
    (``context/reset``: the worker that held the chat is gone). Only while run ``run_id`` is
    active: else nothing is written (:class:`~..store.RunEndedError`)."""
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
    store = log.store

    async def forget(conn: Any, _recs: list[Any]) -> None:
        await store.set_chat(conn, str(chat["id"]), session_id=None)

    await log.append(str(chat["id"]), [note], before=forget, active_run=run_id)
