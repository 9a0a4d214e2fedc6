"""The integer keys of chats and runs (``num``: how ``events`` names them) in SQL, and a
row as a plain dict.

Example:
    >>> _row_dict(None) is None
    True
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from sqlalchemy import Row, func, select

from ..models import chats, runs


def _chat_key(chat_id: str) -> Any:
    """The chat's ``num`` (its key in ``events``), as a scalar subquery."""
    return select(chats.c.num).where(chats.c.id == chat_id).scalar_subquery()


def _run_key(run_id: str) -> Any:
    """The run's ``num`` (its key in ``events``), as a scalar subquery."""
    return select(runs.c.num).where(runs.c.id == run_id).scalar_subquery()


def _next_num(table: Any, is_sqlite: bool) -> Any:
    """A new ``num`` for a row of ``chats`` or ``runs``: PostgreSQL's sequence (migration
    0006); on SQLite, whose writes are serialized, one more than the largest."""
    if is_sqlite:
        return select(func.coalesce(func.max(table.c.num), 0) + 1).scalar_subquery()
    return func.nextval(f"{table.name}_num_seq")



ID_BATCH = 10_000
"""The most ids one ``IN (…)`` list takes: each is a bound value, and asyncpg sends at most
32,767 of them in a statement."""


def id_batches(ids: Iterable[str], size: int = ID_BATCH) -> Iterator[list[str]]:
    """``ids`` in lists of at most ``size`` (for ``IN (…)`` lists of any length).

    Example:
        >>> [len(b) for b in id_batches(map(str, range(25_000)))]
        [10000, 10000, 5000]
        >>> list(id_batches([]))
        []
    """
    batch: list[str] = []
    for i in ids:
        batch.append(i)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _row_dict(row: Row[Any] | None) -> dict[str, Any] | None:
    return dict(row._mapping) if row is not None else None
