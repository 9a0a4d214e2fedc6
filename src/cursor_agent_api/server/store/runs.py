"""The runs' rows: create (with the run's first record), read, list, change.

Example:
    >>> import asyncio, tempfile
    >>> from cursor_agent_api.server.store import NewRecord, Store
    >>> async def demo() -> tuple[str, int, list[str]]:
    ...     store = Store(f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/db.sqlite3")
    ...     await store.start()
    ...     chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
    ...     run, rec = await store.create_run(
    ...         chat["id"], "hi", lambda r: NewRecord("server", "run", "queued", {"run_id": r["id"]}))
    ...     await store.update_run(run["id"], status="succeeded")
    ...     runs = await store.list_runs(chat["id"])
    ...     await store.close()
    ...     return run["status"], rec.seq, [r["status"] for r in runs]
    >>> asyncio.run(demo())
    ('queued', 1, ['succeeded'])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import and_, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from ..models import ACTIVE_RUN, ACTIVE_STATUSES, runs
from .bounds import session_or_none
from .errors import ActiveRunError
from .ids import new_id, now_ms
from .keys import _next_num, _row_dict
from .records import EventRecord, NewRecord
from .run_order import fill_page, newest_run_ids, row_size
from .writes import AppendOnce, LogWrites


class RunRows(LogWrites):
    """The runs of :class:`~cursor_agent_api.server.store.Store` (a new run's record is
    appended with it: :meth:`~.writes.LogWrites.append`)."""

    async def create_run(
        self,
        chat_id: str,
        prompt: str,
        record: Callable[[dict[str, Any]], NewRecord],
        *,
        server_id: str | None = None,
        run_id: str | None = None,
        once: AppendOnce | None = None,
    ) -> tuple[dict[str, Any], EventRecord]:
        """Insert a queued run and its ``run/queued`` record in one transaction.

        ``server_id`` names the server process that owns the run. Raises
        :class:`ActiveRunError` when the chat already has an active run. Returns the row
        as inserted (not read again: once committed, nothing more can fail here) and the
        record. ``run_id``: the new run's id (else a new one); ``once``: see
        :class:`~.writes.AppendOnce`.
        """
        run_id = run_id or new_id()
        run: dict[str, Any] = {
            "id": run_id,
            "chat_id": chat_id,
            "prompt": prompt,
            "status": "queued",
            "server_id": server_id,
            "created_ms": now_ms(),
        }

        async def insert_run(conn: AsyncConnection, _recs: list[EventRecord]) -> None:
            await conn.execute(insert(runs).values(**run, num=_next_num(runs, self.is_sqlite)))

        new = record(run)
        new.run_id = run_id
        try:
            recs = await self.append(chat_id, [new], before=insert_run, purpose="run_create", once=once)
        except IntegrityError as e:
            raise ActiveRunError(f"chat {chat_id} already has an active run") from e
        full = {c.name: None for c in runs.columns if c.name != "num"}
        full.update(run)
        return full, recs[0]

    async def get_run(self, run_id: str) -> dict[str, Any] | None:
        """The run, or ``None`` (for an id holding a NUL too: none has one, and PostgreSQL
        text cannot hold it)."""
        if "\x00" in run_id:
            return None
        async with self.connect() as conn:
            res = await conn.execute(select(runs).where(runs.c.id == run_id))
            return _row_dict(res.first())

    async def list_runs(
        self, chat_id: str, *, before_run: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """The chat's runs, oldest first: its newest ``limit`` (all, for ``None``) older than
        run ``before_run`` (none, for a run not of this chat): see :mod:`.run_order`."""
        async with self.connect() as conn:
            if before_run is None and limit is None:
                ids = None
            else:
                ids = await newest_run_ids(conn, chat_id, before_run, limit)
                if not ids:
                    return []
            cond = runs.c.chat_id == chat_id if ids is None else runs.c.id.in_(ids)
            res = await conn.execute(select(runs).where(cond).order_by(runs.c.created_ms, runs.c.id))
            return [dict(r._mapping) for r in res]

    async def page_runs(
        self, chat_id: str, *, before_run: str | None, limit: int, max_bytes: int
    ) -> tuple[list[dict[str, Any]], bool]:
        """A page of the chat's runs, oldest first: its newest ``limit`` older than run
        ``before_run``, fewer when their rows pass about ``max_bytes`` (one at least); and
        whether older runs are left (:func:`.run_order.fill_page`)."""
        async with self.connect() as conn:

            async def read(ids: list[str]) -> list[tuple[int, dict[str, Any]]]:
                res = await conn.execute(select(runs).where(runs.c.id.in_(ids)))
                rows = {str(r.id): dict(r._mapping) for r in res}
                return [(row_size(rows[i]), rows[i]) for i in ids if i in rows]

            page, more = await fill_page(conn, chat_id, before_run, limit, max_bytes, read)
        page.reverse()
        return page, more

    async def active_runs(self) -> list[dict[str, Any]]:
        """Runs still marked queued or running."""
        async with self.connect() as conn:
            res = await conn.execute(
                select(runs).where(runs.c.status.in_(ACTIVE_STATUSES)).order_by(runs.c.created_ms)
            )
            return [dict(r._mapping) for r in res]

    async def chat_active_run(self, chat_id: str) -> dict[str, Any] | None:
        """The chat's run still marked queued or running (one at most), or ``None``: read from
        the index ``uq_runs_one_active_per_chat`` (:data:`~..models.ACTIVE_RUN`), never
        from the chat's other runs.

        Example:
            >>> import asyncio, tempfile
            >>> from cursor_agent_api.server.store import NewRecord, Store
            >>> async def demo() -> tuple[str, object]:
            ...     store = Store(f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/db.sqlite3")
            ...     await store.start()
            ...     chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
            ...     run, _ = await store.create_run(
            ...         chat["id"], "hi", lambda r: NewRecord("server", "run", "queued", {}))
            ...     active = await store.chat_active_run(chat["id"])
            ...     await store.update_run(run["id"], status="succeeded")
            ...     after = await store.chat_active_run(chat["id"])
            ...     await store.close()
            ...     return active["prompt"], after
            >>> asyncio.run(demo())
            ('hi', None)
        """
        async with self.connect() as conn:
            res = await conn.execute(select(runs).where(runs.c.chat_id == chat_id, ACTIVE_RUN))
            return _row_dict(res.first())

    async def set_run(self, conn: AsyncConnection, run_id: str, **values: Any) -> None:
        """Inside a transaction: change a run's fields (texts made storable)."""
        await self._change_run(conn, run_id, None, values)

    async def end_run(
        self, conn: AsyncConnection, run_id: str, *, only: Sequence[str] = ACTIVE_STATUSES, **values: Any
    ) -> bool:
        """Inside a transaction: record a run's end (its fields, as :meth:`set_run`) if its
        status is still one of ``only`` (an active one by default); False, nothing changed,
        otherwise. Whoever ends a run first wins: a late end (a worker's, after an API
        server's sweep marked the run interrupted) never overwrites a final status.

        Example:
            >>> import asyncio, tempfile
            >>> from cursor_agent_api.server.store import NewRecord, Store
            >>> async def demo() -> tuple[bool, bool, str]:
            ...     store = Store(f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/db.sqlite3")
            ...     await store.start()
            ...     chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
            ...     run, _ = await store.create_run(
            ...         chat["id"], "hi", lambda r: NewRecord("server", "run", "queued", {}))
            ...     async with store.transaction() as conn:
            ...         first = await store.end_run(conn, run["id"], status="interrupted")
            ...     async with store.transaction() as conn:
            ...         late = await store.end_run(conn, run["id"], status="succeeded")
            ...     status = (await store.get_run(run["id"]))["status"]
            ...     await store.close()
            ...     return first, late, status
            >>> asyncio.run(demo())
            (True, False, 'interrupted')
        """
        return await self._change_run(conn, run_id, only, values)

    async def _change_run(
        self, conn: AsyncConnection, run_id: str, only: Sequence[str] | None, values: dict[str, Any]
    ) -> bool:
        clean = {k: self._clean_text(v) if isinstance(v, str) else v for k, v in values.items()}
        if "session_id" in clean:  # the agent's: bounded to its column (bounds.py)
            clean["session_id"] = session_or_none(clean["session_id"])
        where = runs.c.id == run_id
        if only is not None:
            where = and_(where, runs.c.status.in_(tuple(only)))
        res = await conn.execute(update(runs).where(where).values(**clean))
        return bool(res.rowcount)

    async def update_run(self, run_id: str, *, only: Sequence[str] | None = None, **values: Any) -> bool:
        """Change a run's fields in a transaction of its own; with ``only``, only while its
        status is one of those (as :meth:`end_run`: ``ACTIVE_STATUSES`` for a write that must
        not land on a run another process ended). False if nothing was changed.

        Example:
            >>> import asyncio, tempfile
            >>> from cursor_agent_api.server.store import NewRecord, Store
            >>> async def demo() -> tuple[bool, bool, object]:
            ...     store = Store(f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/db.sqlite3")
            ...     await store.start()
            ...     chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
            ...     run, _ = await store.create_run(
            ...         chat["id"], "hi", lambda r: NewRecord("server", "run", "queued", {}))
            ...     active = await store.update_run(run["id"], only=ACTIVE_STATUSES, pid=41)
            ...     await store.update_run(run["id"], status="cancelled")
            ...     late = await store.update_run(run["id"], only=ACTIVE_STATUSES, pid=42)
            ...     pid = (await store.get_run(run["id"]))["pid"]
            ...     await store.close()
            ...     return active, late, pid
            >>> asyncio.run(demo())
            (True, False, 41)
        """
        async with self.transaction() as conn:
            return await self._change_run(conn, run_id, only, values)
