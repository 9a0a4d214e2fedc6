"""Reading the folded turn state: a chat's runs, texts and tool calls as one snapshot, a
run's tool calls, one call. (It is written with the records: :mod:`.writes`.)

Example:
    >>> import asyncio, tempfile
    >>> from cursor_agent_api.server.store import Store
    >>> async def demo() -> tuple[object, ...]:
    ...     store = Store(f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/db.sqlite3")
    ...     await store.start()
    ...     chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
    ...     found = await store.read_chat_turns(chat["id"]), await store.read_chat_turns("nope")
    ...     await store.close()
    ...     return found
    >>> [(t.last_seq, t.runs, t.has_more) for t in asyncio.run(demo())]
    [(0, [], False), (-1, [], False)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from ..models import chats, runs, tool_calls, turn_texts
from .engine import StoreEngine
from .run_order import fill_page, row_size

Row = dict[str, Any]


@dataclass
class TurnRows:
    """A page of a chat's folded state: ``last_seq`` (-1: no such chat), the rows of its
    runs (oldest first), their texts and tool calls, and whether older runs are left."""

    last_seq: int
    runs: list[dict[str, Any]]
    texts: list[dict[str, Any]]
    calls: list[dict[str, Any]]
    has_more: bool


async def _turn_rows(conn: AsyncConnection, ids: list[str]) -> list[tuple[Row, list[Row], list[Row]]]:
    """Runs ``ids`` (in that order), each with its texts and its tool calls (by index)."""
    if not ids:
        return []
    rows = {str(r.id): dict(r._mapping) for r in await conn.execute(select(runs).where(runs.c.id.in_(ids)))}
    texts: dict[str, list[dict[str, Any]]] = {i: [] for i in ids}
    for r in await conn.execute(select(turn_texts).where(turn_texts.c.run_id.in_(ids))):
        texts[str(r.run_id)].append(dict(r._mapping))
    calls: dict[str, list[dict[str, Any]]] = {i: [] for i in ids}
    q = select(tool_calls).where(tool_calls.c.run_id.in_(ids)).order_by(tool_calls.c.run_id, tool_calls.c.idx)
    for r in await conn.execute(q):
        calls[str(r.run_id)].append(dict(r._mapping))
    return [(rows[i], texts[i], calls[i]) for i in ids if i in rows]


class TurnReads(StoreEngine):
    """The reads of the folded turn state of :class:`~cursor_agent_api.server.store.Store`."""

    async def list_tool_calls(self, chat_id: str, run_id: str | None = None) -> list[dict[str, Any]]:
        """Tool calls of a chat (or of one of its runs), in the order they started."""
        cond = tool_calls.c.chat_id == chat_id
        if run_id is not None:
            cond = and_(cond, tool_calls.c.run_id == run_id)
        q = (
            select(tool_calls)
            .where(cond)
            .order_by(func.coalesce(tool_calls.c.started_seq, tool_calls.c.completed_seq), tool_calls.c.idx)
        )
        async with self.connect() as conn:
            res = await conn.execute(q)
            return [dict(r._mapping) for r in res]

    async def read_chat_turns(
        self,
        chat_id: str,
        *,
        before_run: str | None = None,
        limit: int | None = None,
        max_bytes: int | None = None,
    ) -> TurnRows:
        """A chat's ``last_seq`` and the runs, texts and tool calls of its newest runs, read
        as one snapshot: the newest ``limit`` runs (all, for ``None``) older than run
        ``before_run`` (from the newest, for ``None``), fewer when their rows pass about
        ``max_bytes`` (always one run at least). ``has_more``: older runs are left.

        The state is written with the records, in their transaction: read in one
        snapshot (PostgreSQL: ``REPEATABLE READ``; SQLite: with this process's writes held),
        it is exactly the fold of the records up to ``last_seq``. The runs are read a few
        at a time, newest first: a page never holds the rows of the runs it leaves out.
        """
        async with self.snapshot() as conn:
            last = (
                await conn.execute(select(chats.c.last_seq).where(chats.c.id == chat_id))
            ).scalar_one_or_none()
            if last is None:
                return TurnRows(-1, [], [], [], False)

            async def read(ids: list[str]) -> list[tuple[int, tuple[Row, list[Row], list[Row]]]]:
                return [
                    (sum(row_size(r) for r in (run, *texts, *calls)), (run, texts, calls))
                    for run, texts, calls in await _turn_rows(conn, ids)
                ]

            taken, has_more = await fill_page(conn, chat_id, before_run, limit, max_bytes, read)
        page = TurnRows(int(last), [], [], [], has_more)
        for run, texts, calls in reversed(taken):  # oldest first
            page.runs.append(run)
            page.texts += texts
            page.calls += calls
        return page

    async def get_tool_call(self, run_id: str, index: int) -> dict[str, Any] | None:
        """One stored tool call of a run, by its index, or ``None``."""
        async with self.connect() as conn:
            row = (
                await conn.execute(
                    select(tool_calls).where(and_(tool_calls.c.run_id == run_id, tool_calls.c.idx == index))
                )
            ).first()
        return dict(row._mapping) if row is not None else None
