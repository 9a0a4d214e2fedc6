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
    >>> asyncio.run(demo())
    ((0, [], [], []), (-1, [], [], []))
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, func, select

from ..models import chats, runs, tool_calls, turn_texts
from .engine import StoreEngine


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
        self, chat_id: str
    ) -> tuple[int, list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        """A chat's ``last_seq``, runs, texts and tool calls, read as one snapshot.

        The state is written with the records, in their transaction: read in one
        snapshot (PostgreSQL: ``REPEATABLE READ``; SQLite: with this process's writes held),
        it is exactly the fold of the records up to ``last_seq``.
        """
        async with self.snapshot() as conn:
            last = (
                await conn.execute(select(chats.c.last_seq).where(chats.c.id == chat_id))
            ).scalar_one_or_none()
            if last is None:
                return -1, [], [], []
            run_rows = [
                dict(r._mapping)
                for r in await conn.execute(
                    select(runs).where(runs.c.chat_id == chat_id).order_by(runs.c.created_ms, runs.c.id)
                )
            ]
            text_rows = [
                dict(r._mapping)
                for r in await conn.execute(select(turn_texts).where(turn_texts.c.chat_id == chat_id))
            ]
            call_rows = [
                dict(r._mapping)
                for r in await conn.execute(
                    select(tool_calls)
                    .where(tool_calls.c.chat_id == chat_id)
                    .order_by(tool_calls.c.run_id, tool_calls.c.idx)
                )
            ]
        return int(last), run_rows, text_rows, call_rows


    async def get_tool_call(self, run_id: str, index: int) -> dict[str, Any] | None:
        """One stored tool call of a run, by its index, or ``None``."""
        async with self.connect() as conn:
            row = (
                await conn.execute(
                    select(tool_calls).where(and_(tool_calls.c.run_id == run_id, tool_calls.c.idx == index))
                )
            ).first()
        return dict(row._mapping) if row is not None else None
