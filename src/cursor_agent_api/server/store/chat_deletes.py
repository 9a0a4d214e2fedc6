"""Deleting a chat: its row and every row that hangs off it, in one transaction.

What names a chat, in the order the rows go (each before what it references; no foreign key
cascades): ``events`` (by the chat's ``num``), ``tool_calls`` and ``turn_texts`` (by its id),
on PostgreSQL the job queue's jobs of its runs (``procrastinate_jobs``, whose ``lock`` is the
chat's id; their ``procrastinate_events`` cascade), ``runs``, then ``chats``.

A chat with a queued or running run is not deleted (:class:`~.errors.ActiveRunError`), nor,
on PostgreSQL, one whose job a worker still holds or has yet to take (``todo``, ``doing``:
a run marked over while its worker has not stopped yet). The chat's row is locked first
(``SELECT … FOR UPDATE`` on PostgreSQL, which a new run's foreign key check waits for;
SQLite's write lock, taken by the first statement): a run posted at the same moment is
either seen here (409) or refused after the commit (the chat is gone).

On PostgreSQL the commit also notifies ``cursor_agent_api_events`` with
``"<chat id> deleted"`` (:data:`~.queue_schema.CHAT_DELETED`): every API server closes the
chat's WebSockets (:mod:`..notify`).

Example:
    >>> import asyncio, tempfile
    >>> from cursor_agent_api.server.store import NewRecord, NotFoundError, Store
    >>> async def demo() -> tuple[dict[str, int], bool]:
    ...     store = Store(f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/db.sqlite3")
    ...     await store.start()
    ...     chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
    ...     run, _ = await store.create_run(
    ...         chat["id"], "hi", lambda r: NewRecord("server", "run", "queued", {"run_id": r["id"]}))
    ...     await store.update_run(run["id"], status="succeeded")
    ...     deleted = await store.delete_chat(chat["id"])
    ...     try:
    ...         await store.delete_chat(chat["id"])
    ...     except NotFoundError:
    ...         gone = True
    ...     await store.close()
    ...     return deleted, gone
    >>> asyncio.run(demo())
    ({'events': 1, 'tool_calls': 0, 'turn_texts': 0, 'jobs': 0, 'runs': 1, 'chats': 1}, True)
"""

from __future__ import annotations

from sqlalchemy import delete, select, text, update

from ..models import ACTIVE_STATUSES, chats, events, runs, tool_calls, turn_texts
from .engine import StoreEngine
from .errors import ActiveRunError, NotFoundError
from .ids import now_ms
from .queue_schema import CHAT_DELETED, EVENTS_CHANNEL

_JOBS_HELD = text(
    "SELECT 1 FROM procrastinate_jobs WHERE lock = :chat AND status IN ('todo', 'doing') LIMIT 1"
)
_JOBS_DELETE = text("DELETE FROM procrastinate_jobs WHERE lock = :chat")
_NOTIFY = text("SELECT pg_notify(:channel, :payload)")


class ChatDeletes(StoreEngine):
    """Deleting chats (:meth:`delete_chat`) for :class:`~cursor_agent_api.server.store.Store`."""

    async def delete_chat(self, chat_id: str) -> dict[str, int]:
        """Delete the chat and everything of it (see the module doc); returns how many rows
        went from each table (``events``, ``tool_calls``, ``turn_texts``, ``jobs``, ``runs``,
        ``chats``).

        Raises :class:`NotFoundError` for an unknown chat, :class:`ActiveRunError` (nothing
        deleted) while it has a queued or running run, or (PostgreSQL) a job not over.
        """
        if "\x00" in chat_id:
            raise NotFoundError(f"no chat {chat_id}")
        counts: dict[str, int] = {}
        async with self.transaction("chat_delete") as conn:
            # A write first: SQLite's write lock (against other processes too) from here on.
            res = await conn.execute(
                update(chats).where(chats.c.id == chat_id).values(updated_ms=now_ms())
                .returning(chats.c.num)
            )
            if res.first() is None:
                raise NotFoundError(f"no chat {chat_id}")
            # PostgreSQL: the row locked against a new run's foreign key check (FOR KEY SHARE,
            # which the UPDATE's lock lets through): a run inserted before this is seen below.
            row = (await conn.execute(
                select(chats.c.num).where(chats.c.id == chat_id).with_for_update()
            )).one()
            active = await conn.execute(
                select(runs.c.id)
                .where(runs.c.chat_id == chat_id, runs.c.status.in_(ACTIVE_STATUSES))
                .limit(1)
            )
            if active.first() is not None:
                raise ActiveRunError(f"chat {chat_id} has a queued or running run")
            if not self.is_sqlite and (await conn.execute(_JOBS_HELD, {"chat": chat_id})).first():
                raise ActiveRunError(f"chat {chat_id} has a job a worker has not finished")
            steps = [
                ("events", delete(events).where(events.c.chat_key == row.num)),
                ("tool_calls", delete(tool_calls).where(tool_calls.c.chat_id == chat_id)),
                ("turn_texts", delete(turn_texts).where(turn_texts.c.chat_id == chat_id)),
            ]
            for name, statement in steps:
                counts[name] = (await conn.execute(statement)).rowcount
            counts["jobs"] = 0
            if not self.is_sqlite:
                counts["jobs"] = (await conn.execute(_JOBS_DELETE, {"chat": chat_id})).rowcount
            gone = (await conn.execute(
                delete(runs).where(runs.c.chat_id == chat_id).returning(runs.c.id)
            )).all()
            counts["runs"] = len(gone)
            counts["chats"] = (await conn.execute(delete(chats).where(chats.c.id == chat_id))).rowcount
            if not self.is_sqlite:  # delivered at the commit
                payload = f"{chat_id} {CHAT_DELETED}"
                await conn.execute(_NOTIFY, {"channel": EVENTS_CHANNEL, "payload": payload})
        self._chats.pop(chat_id, None)  # the write path's knowledge of their keys
        for (run_id,) in gone:
            self._run_nums.pop(run_id, None)
        return counts
