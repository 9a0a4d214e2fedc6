"""The distributed mode's ends of runs, through the log: finishing a run only if it is still
active (API servers and workers may race to finish the same run: the first one wins, the
others change nothing), the record of a lost worker, a chat's context reset on a new worker.
Their SQL is the store's (:mod:`..store.claims`, :meth:`~..store.runs.RunRows.end_run`).

Example:
    >>> lost_worker_note({"id": "r", "worker": "w1", "worker_id": 7, "last_seq": 12}, "gone").payload["seq"]
    12
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..log import EventLog
from ..models import ACTIVE_STATUSES
from ..requests import cancelled_answers
from ..runs import run_record
from ..store import NewRecord, now_ms, write_turn
from ..turns import Changes, FoldedBatch, load_run_fold


class _NotActiveError(Exception):
    """The run was no longer in the expected status: roll the write back."""


class _MovedOnError(Exception):
    """Records of the chat were written after what the end was built from: build it again."""


_END_ATTEMPTS = 20
"""How many times an end is built again because the run's process went on writing (it looked
lost but was not); the last try is written as built."""


async def finish_if_active(
    log: EventLog,
    run: dict[str, Any],
    status: str,
    *,
    only: Sequence[str] = ACTIVE_STATUSES,
    error: str | None = None,
    error_type: str | None = None,
    notes: Sequence[NewRecord] = (),
    close_requests: tuple[str, str] | None = None,
    said: Callable[[dict[str, Any]], tuple[str, Sequence[NewRecord]]] | None = None,
) -> bool:
    """Record the end of ``run`` (``notes``, then its ``run/<status>`` record) if its status
    is still one of ``only``; False (nothing written) otherwise. ``close_requests``
    (``by``, ``reason``): the run's requests still open are answered ``cancelled`` with the
    end (:func:`~..requests.cancelled_answers`). ``said``: the end's ``error`` and ``notes``
    are built from the run as stored when the end is built (its ``last_seq``), instead.

    What the end says (the turn's state closed, the open requests, ``said``) is read from
    the store before its transaction; if the chat has records written since (a worker that
    looked lost went on writing until its run's end), the end is built again from them."""
    run_id = str(run["id"])
    chat_id = str(run["chat_id"])
    store = log.store
    for attempt in range(_END_ATTEMPTS):
        (seen,) = [n for _, n in await store.chat_last_seqs([chat_id])] or [0]
        if said is not None:  # read after ``seen``: a record written since fails the commit
            stored = await store.get_run(run_id)
            if stored is None:
                return False  # its chat was deleted
            run = stored
            error, notes = said(run)
        values: dict[str, Any] = {
            "status": status,
            "ended_ms": now_ms(),
            "error": error,
            "error_type": error_type,
        }
        # the turn's state is closed as the run ends (calls left open abandoned), as RunManager does
        fold = await load_run_fold(store, chat_id, run_id)
        closing = fold.close()
        values["turn"] = fold.turn()
        answers = [] if close_requests is None else await cancelled_answers(
            store, run_id, by=close_requests[0], reason=close_requests[1])
        first = [*answers, *notes]
        changes: list[Changes] = [*(() for _ in first), closing]
        last_try = attempt == _END_ATTEMPTS - 1

        async def before(conn: Any, recs: list[Any], closing: Changes = closing, fold: Any = fold,
                         changes: list[Changes] = changes, values: dict[str, Any] = values,
                         seen: int = seen, last_try: bool = last_try) -> None:
            if recs[0].seq != seen + 1 and not last_try:
                raise _MovedOnError(run_id)  # rolled back: built again from what is stored now
            if not await store.end_run(conn, run_id, only=only, **values, last_seq=recs[-1].seq):
                raise _NotActiveError(run_id)
            if closing:
                batch = FoldedBatch(fold.chat_id, run_id, [], changes, fold.errors, fold.turn())
                await write_turn(store, conn, batch, recs, log.max_field_bytes)

        final = {**run, **values}
        try:
            await log.append(
                chat_id, [*first, run_record(status, final)], before=before, purpose="run_end",
                changes=changes,
            )
        except _MovedOnError:
            continue
        except _NotActiveError:
            return False
        return True
    return False  # pragma: no cover - the last try never raises _MovedOnError


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
