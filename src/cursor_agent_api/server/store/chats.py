"""The chats' rows: create, read, list, change.

Example:
    >>> import asyncio, tempfile
    >>> from cursor_agent_api.server.store import Store
    >>> async def demo() -> tuple[str, list[tuple[str, int]]]:
    ...     store = Store(f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/db.sqlite3")
    ...     await store.start()
    ...     chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
    ...     changed = await store.update_chat(chat["id"], title="renamed")
    ...     seqs = await store.chat_last_seqs([chat["id"]])
    ...     await store.close()
    ...     return changed["title"], [(i == chat["id"], n) for i, n in seqs]
    >>> asyncio.run(demo())
    ('renamed', [(True, 0)])
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from sqlalchemy import Select, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from ..models import chats, runs
from .bounds import session_or_none
from .engine import StoreEngine
from .errors import ActiveRunError, NotFoundError
from .ids import new_id, now_ms
from .keys import _next_num, _row_dict, id_batches


def chats_page_query(before: tuple[int, str] | None) -> Select[Any]:
    """The chats, most recently active first, from after ``before`` (``(updated_ms, id)``),
    each with its latest run's ``status``: read from ``ix_chats_recent`` backwards, from
    ``before`` on (a range of ``updated_ms``, not a scan of the chats before it).

    Example:
        >>> q = chats_page_query((5, "c"))
        >>> "chats.updated_ms <= " in str(q), "ORDER BY chats.updated_ms DESC, chats.id DESC" in str(q)
        (True, True)
    """
    latest = (
        select(runs.c.status)
        .where(runs.c.chat_id == chats.c.id)
        .order_by(runs.c.created_ms.desc(), runs.c.id.desc())
        .limit(1)
        .scalar_subquery()
    )
    q = select(chats, latest.label("status"))
    if before is not None:
        at, chat_id = before
        q = q.where(chats.c.updated_ms <= at, or_(chats.c.updated_ms < at, chats.c.id < chat_id))
    return q.order_by(chats.c.updated_ms.desc(), chats.c.id.desc())


class ChatRows(StoreEngine):
    """The chats of :class:`~cursor_agent_api.server.store.Store`."""

    # ---- chats -------------------------------------------------------------------------

    async def create_chat(
        self, *, workspace: str, model: str | None, options: dict[str, Any], title: str
    ) -> dict[str, Any]:
        """Insert a chat; returns it as a dict."""
        ts = now_ms()
        row = {
            "id": new_id(),
            "session_id": None,
            "workspace": workspace,
            "model": model,
            "options": options,
            "title": title,
            "created_ms": ts,
            "updated_ms": ts,
            "last_seq": 0,
        }
        async with self.transaction() as conn:
            await conn.execute(insert(chats).values(**row, num=_next_num(chats, self.is_sqlite)))
        return row

    async def get_chat(self, chat_id: str) -> dict[str, Any] | None:
        """The chat, or ``None`` (for an id holding a NUL too: none has one, and PostgreSQL
        text cannot hold it)."""
        if "\x00" in chat_id:
            return None
        async with self.connect() as conn:
            res = await conn.execute(select(chats).where(chats.c.id == chat_id))
            return _row_dict(res.first())

    async def update_chat(
        self,
        chat_id: str,
        *,
        idle_only: bool = False,
        merge_options: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        **values: Any,
    ) -> dict[str, Any]:
        """Change a chat's fields (``title``, ``session_id``, ``options``); returns the chat.

        With ``idle_only``, raises :class:`ActiveRunError` (changing nothing) when the chat
        has a queued or running run; the check and the change are one transaction.
        With ``merge_options``, the new options are ``merge_options(current options)``, read
        in the same transaction with the chat's row locked: two changes at once are applied
        one after the other, neither is lost. An exception it raises changes nothing.
        """
        async with self.transaction() as conn:
            # A write first: it locks the row (PostgreSQL) or the database (SQLite, against
            # other processes too) until the commit, so the options read here are current.
            res = await conn.execute(
                update(chats)
                .where(chats.c.id == chat_id)
                .values(updated_ms=now_ms())
                .returning(chats.c.options)
            )
            current = res.first()
            if current is None:
                raise NotFoundError(f"no chat {chat_id}")
            if idle_only:
                active = await conn.execute(
                    select(runs.c.id)
                    .where(runs.c.chat_id == chat_id, runs.c.status.in_(("queued", "running")))
                    .limit(1)
                )
                if active.first() is not None:
                    raise ActiveRunError(f"chat {chat_id} has an active run")
            if merge_options is not None:
                values["options"] = merge_options(dict(current.options or {}))
            res = await conn.execute(
                update(chats).where(chats.c.id == chat_id).values(**values).returning(*chats.c)
            )
            row = res.first()
        if row is None:  # pragma: no cover - the row was locked above
            raise NotFoundError(f"no chat {chat_id}")
        return dict(row._mapping)

    async def name_chat(self, chat_id: str, title: str, *, if_title: str) -> bool:
        """Set the chat's title only while it is still ``if_title`` (compare and set: a
        rename that landed first is kept); True if it was set.

        Example:
            >>> import asyncio, tempfile
            >>> from cursor_agent_api.server.store import Store
            >>> async def demo() -> tuple[bool, bool, str]:
            ...     store = Store(f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/db.sqlite3")
            ...     await store.start()
            ...     chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
            ...     first = await store.name_chat(chat["id"], "named", if_title="t")
            ...     second = await store.name_chat(chat["id"], "again", if_title="t")
            ...     title = (await store.get_chat(chat["id"]) or {})["title"]
            ...     await store.close()
            ...     return first, second, title
            >>> asyncio.run(demo())
            (True, False, 'named')
        """
        async with self.transaction() as conn:
            res = await conn.execute(
                update(chats)
                .where(chats.c.id == chat_id, chats.c.title == if_title)
                .values(title=self._clean_text(title), updated_ms=now_ms())
            )
            return bool(res.rowcount)

    async def list_chats(
        self, *, limit: int = 100, offset: int = 0, before: tuple[int, str] | None = None
    ) -> tuple[list[dict[str, Any]], bool]:
        """Chats, most recently active first (``updated_ms``, then ``id``, both descending),
        each with its latest run's status; and whether more are left.

        ``before``: the ``(updated_ms, id)`` of the last chat of the previous page, which
        this page starts after (a key, not a position: no chat is shown twice, and none that
        stayed in place is skipped; one that becomes active between two pages moves before
        the first, where a new first page shows it); ``offset`` skips
        that many from there. Read from ``ix_chats_recent`` (migration 0010).

        Example:
            >>> import asyncio, tempfile
            >>> from cursor_agent_api.server.store import Store
            >>> async def demo() -> tuple[int, bool, int, bool, str]:
            ...     store = Store(f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/db.sqlite3")
            ...     await store.start()
            ...     for title in "abc":
            ...         await store.create_chat(workspace="/w", model=None, options={}, title=title)
            ...     first, more = await store.list_chats(limit=2)
            ...     key = (first[-1]["updated_ms"], first[-1]["id"])
            ...     rest, left = await store.list_chats(limit=2, before=key)
            ...     await store.close()
            ...     titles = "".join(sorted(c["title"] for c in first + rest))
            ...     return len(first), more, len(rest), left, titles
            >>> asyncio.run(demo())
            (2, True, 1, False, 'abc')
        """
        q = chats_page_query(before).limit(limit + 1).offset(offset)
        async with self.connect() as conn:
            rows = [dict(r._mapping) for r in await conn.execute(q)]
        return rows[:limit], len(rows) > limit

    # ---- runs --------------------------------------------------------------------------

    async def set_chat(self, conn: AsyncConnection, chat_id: str, **values: Any) -> None:
        """Inside a transaction: change a chat's fields (texts made storable)."""
        clean = {k: self._clean_text(v) if isinstance(v, str) else v for k, v in values.items()}
        if "session_id" in clean:  # the agent's: bounded to its column (bounds.py)
            clean["session_id"] = session_or_none(clean["session_id"])
        await conn.execute(update(chats).where(chats.c.id == chat_id).values(**clean))

    async def chat_last_seqs(self, chat_ids: Collection[str] | None = None) -> list[tuple[str, int]]:
        """Each chat's id and ``last_seq`` (of ``chat_ids`` only, when given)."""
        q = select(chats.c.id, chats.c.last_seq)
        queries = [q] if chat_ids is None else [q.where(chats.c.id.in_(b)) for b in id_batches(chat_ids)]
        out: list[tuple[str, int]] = []
        async with self.connect() as conn:
            for query in queries:
                out += [(str(i), int(s)) for i, s in await conn.execute(query)]
        return out
