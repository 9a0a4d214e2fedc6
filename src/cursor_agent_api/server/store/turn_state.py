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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, and_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from ..models import CALL_PLACE, chats, runs, tool_calls, turn_texts
from .engine import StoreEngine
from .run_order import CHUNK, fill_page, row_size

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


def call_places_query(chat_id: str, run_id: str | None, after_seq: int) -> Select[Any]:
    """The ids and places (:data:`~..models.CALL_PLACE`) of the tool calls of a chat (or of
    run ``run_id``) past ``after_seq``, in their order: a chat's read from
    ``ix_tool_calls_chat_order`` alone, from where the page starts (no sort of the chat's
    calls: ``tests/server/test_run_index.py``); a run's by its key (``uq_tool_calls_run_idx``).

    Example:
        >>> print(call_places_query("c", None, 7))  # doctest: +NORMALIZE_WHITESPACE
        SELECT tool_calls.id, coalesce(tool_calls.started_seq, tool_calls.completed_seq, 0)
        AS coalesce_1 FROM tool_calls WHERE tool_calls.chat_id = :chat_id_1
        AND coalesce(tool_calls.started_seq, tool_calls.completed_seq, 0) > :coalesce_2
        ORDER BY coalesce(tool_calls.started_seq, tool_calls.completed_seq, 0), tool_calls.idx
    """
    place = CALL_PLACE
    cond = [tool_calls.c.chat_id == chat_id if run_id is None else tool_calls.c.run_id == run_id]
    if after_seq > 0:
        cond.append(place > after_seq)
    return select(tool_calls.c.id, place).where(*cond).order_by(place, tool_calls.c.idx)


class TurnReads(StoreEngine):
    """The reads of the folded turn state of :class:`~cursor_agent_api.server.store.Store`."""

    async def page_tool_calls(
        self,
        chat_id: str,
        *,
        run_id: str | None = None,
        after_seq: int = 0,
        limit: int,
        max_bytes: int,
        measure: Callable[[Row], int] = row_size,
    ) -> tuple[list[Row], bool, int]:
        """A page of the tool calls of a chat (or of run ``run_id``, which the caller knows
        is the chat's), in the order they started: those whose place
        (:data:`~..models.CALL_PLACE`: the seq of the record that first stored the call) is
        past ``after_seq``, at most ``limit``, fewer when they pass about ``max_bytes`` by
        ``measure`` (one place's calls at least); whether more are left; the place of the
        page's last call (``after_seq`` for an empty page): the next page's ``after_seq``.
        Calls that share a place are never split between pages. The rows are read a few
        places at a time: a page never holds the rows of the calls it leaves out.

        Example:
            >>> import asyncio, tempfile
            >>> from cursor_agent_api.server.store import Store
            >>> async def demo() -> tuple[list[Row], bool, int]:
            ...     store = Store(f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/db.sqlite3")
            ...     await store.start()
            ...     chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
            ...     page = await store.page_tool_calls(chat["id"], limit=10, max_bytes=1000)
            ...     await store.close()
            ...     return page
            >>> asyncio.run(demo())
            ([], False, 0)
        """
        place = CALL_PLACE
        async with self.connect() as conn:
            q = call_places_query(chat_id, run_id, after_seq)
            heads = [(int(i), int(p)) for i, p in await conn.execute(q.limit(limit + 1))]
            more = len(heads) > limit
            if more:
                cut = heads[limit][1]  # the first place left out: none of its calls on this page
                heads = [h for h in heads[:limit] if h[1] != cut]
                if not heads:  # one place's calls fill the page: all of them
                    q = call_places_query(chat_id, run_id, cut - 1).where(place == cut)
                    heads = [(int(i), int(p)) for i, p in await conn.execute(q)]
                    later = call_places_query(chat_id, run_id, cut).limit(1)
                    more = (await conn.execute(later)).first() is not None
            places: dict[int, list[int]] = {}  # the calls' ids, by place, in order
            for call_id, at in heads:
                places.setdefault(at, []).append(call_id)
            groups = list(places.items())
            page: list[Row] = []
            used = 0
            reached = after_seq
            start = 0
            while start < len(groups):
                chunk: list[tuple[int, list[int]]] = []
                while start < len(groups) and sum(len(g[1]) for g in chunk) < CHUNK:
                    chunk.append(groups[start])
                    start += 1
                ids = [i for _, group in chunk for i in group]
                res = await conn.execute(select(tool_calls).where(tool_calls.c.id.in_(ids)))
                rows = {int(r.id): dict(r._mapping) for r in res}
                for at, group in chunk:
                    taken = [rows[i] for i in group if i in rows]
                    size = sum(measure(r) for r in taken)
                    if page and used + size > max_bytes:
                        return page, True, reached
                    page += taken
                    used += size
                    reached = at
        return page, more, reached

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
