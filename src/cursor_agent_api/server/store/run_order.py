"""A chat's runs in their order (``created_ms``, then ``id``), read newest first a page at a
time: the ids of the newest runs before a given one first, then their rows a few at a time
until the page is full (a count, about a size), so a page of a long chat never loads the
rows (prompts, results) of the runs it does not show.

Example:
    >>> import asyncio, tempfile
    >>> from cursor_agent_api.server.store import NewRecord, Store
    >>> async def demo() -> list[list[str]]:
    ...     store = Store(f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/db.sqlite3")
    ...     await store.start()
    ...     chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
    ...     for p in ("a", "b", "c"):
    ...         run, _ = await store.create_run(
    ...             chat["id"], p, lambda r: NewRecord("server", "run", "queued", {}))
    ...         await store.update_run(run["id"], status="succeeded")
    ...     newest = await store.list_runs(chat["id"], limit=2)
    ...     older = await store.list_runs(chat["id"], before_run=newest[0]["id"], limit=2)
    ...     await store.close()
    ...     return [[r["prompt"] for r in newest], [r["prompt"] for r in older]]
    >>> asyncio.run(demo())
    [['b', 'c'], ['a']]
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from sqlalchemy import Select, and_, select, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection

from ..models import runs
from .encoding import json_bytes

T = TypeVar("T")

CHUNK = 8
"""Runs whose rows are read at once while a page is filled."""


def newest_ids_query(chat_id: str, before: tuple[int, str] | None, limit: int | None) -> Select[Any]:
    """The ids of the chat's newest ``limit`` runs (all, for ``None``) before the run whose
    ``(created_ms, id)`` is ``before`` (from the newest, for ``None``), newest first.

    Read from the index ``ix_runs_chat_order`` (migration 0007) alone, in its order, from
    where the page starts: no sort of the chat's runs (``tests/server/test_run_index.py``).

    Example:
        >>> print(newest_ids_query("c", (5, "r"), 2))  # doctest: +NORMALIZE_WHITESPACE
        SELECT runs.id FROM runs WHERE runs.chat_id = :chat_id_1
        AND (runs.created_ms, runs.id) < (:param_1, :param_2)
        ORDER BY runs.created_ms DESC, runs.id DESC LIMIT :param_3
    """
    cond = runs.c.chat_id == chat_id
    if before is not None:
        cond = and_(cond, tuple_(runs.c.created_ms, runs.c.id) < tuple_(*before))
    q = select(runs.c.id).where(cond).order_by(runs.c.created_ms.desc(), runs.c.id.desc())
    return q if limit is None else q.limit(limit)


async def newest_run_ids(
    conn: AsyncConnection, chat_id: str, before_run: str | None, limit: int | None
) -> list[str]:
    """The ids of the chat's newest ``limit`` runs (all, for ``None``) older than run
    ``before_run`` (from the newest, for ``None``; none, for a run not of this chat),
    newest first (:func:`newest_ids_query`). Reads two columns of the chat's runs, never a
    prompt."""
    before = None
    if before_run is not None:
        mark = (
            await conn.execute(
                select(runs.c.created_ms).where(and_(runs.c.id == before_run, runs.c.chat_id == chat_id))
            )
        ).scalar_one_or_none()
        if mark is None:
            return []
        before = (int(mark), before_run)
    return [str(r[0]) for r in await conn.execute(newest_ids_query(chat_id, before, limit))]


async def fill_page(
    conn: AsyncConnection,
    chat_id: str,
    before_run: str | None,
    limit: int | None,
    max_bytes: int | None,
    read: Callable[[list[str]], Awaitable[list[tuple[int, T]]]],
) -> tuple[list[T], bool]:
    """A page of the chat's runs, newest first: what ``read`` makes of runs ``ids`` (each
    with its size), :data:`CHUNK` runs at a time, the newest ``limit`` before run
    ``before_run``, stopped before the run that takes the page past ``max_bytes`` (one run
    at least). Also whether older runs are left."""
    ids = await newest_run_ids(conn, chat_id, before_run, None if limit is None else limit + 1)
    more = limit is not None and len(ids) > limit
    ids = ids[:limit]
    page: list[T] = []
    used = 0
    for start in range(0, len(ids), CHUNK):
        for size, item in await read(ids[start : start + CHUNK]):
            if page and max_bytes is not None and used + size > max_bytes:
                return page, True
            page.append(item)
            used += size
    return page, more


def row_size(row: dict[str, Any]) -> int:
    """About the size of a row in JSON (strings by their length).

    Example:
        >>> row_size({"id": "r1", "prompt": "hello", "usage": {"input_tokens": 3}, "pid": 7})
        33
    """
    return sum(
        len(v) if isinstance(v, str) else len(json_bytes(v)) if isinstance(v, (dict, list)) else 8
        for v in row.values()
    )
