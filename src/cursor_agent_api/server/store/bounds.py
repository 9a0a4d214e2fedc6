"""The agent's values bounded to the typed columns the store derives from them.

The agent's integers have no upper bound (a Python int) and its names no length; the
columns that hold what the store derives from its events do: ``Integer`` is 32 bits,
``BigInteger`` 64 bits, ``String(n)`` ``n`` characters (PostgreSQL refuses more; SQLite
overflows past 64 bits). A value the column cannot hold is bounded here, where the derived
columns are computed (:mod:`.writes`), the same on both databases: an integer out of the
column's range is not stored (``None``: unknown), a name is cut to the column's length. The
event itself keeps the value as the agent wrote it: only the derived column is bounded.

Example:
    >>> from ..models import tool_calls
    >>> int_in(tool_calls.c.exit_code, 2**31), int_in(tool_calls.c.exit_code, -1)
    (None, -1)
    >>> len(cut_to(tool_calls.c.name, "n" * 300))
    200
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Column, Integer, String

_RANGES = ((BigInteger, 63), (Integer, 31))  # BigInteger is an Integer: first


def _bits(column: Column[Any]) -> int:
    for type_, bits in _RANGES:
        if isinstance(column.type, type_):
            return bits
    raise TypeError(f"{column.name} is not an integer column")


def int_in(column: Column[Any], value: int | None) -> int | None:
    """``value`` if the integer column holds it, else ``None``.

    Example:
        >>> from ..models import tool_calls
        >>> int_in(tool_calls.c.duration_ms, 2**63 - 1), int_in(tool_calls.c.duration_ms, 2**63)
        (9223372036854775807, None)
        >>> int_in(tool_calls.c.exit_code, None) is None
        True
    """
    if value is None:
        return None
    limit = 1 << _bits(column)
    return value if -limit <= value < limit else None


def fits(column: Column[Any], value: str) -> bool:
    """Whether the string column holds ``value`` whole (a ``Text`` column holds any).

    Example:
        >>> from ..models import chats
        >>> fits(chats.c.session_id, "s" * 200), fits(chats.c.session_id, "s" * 201)
        (True, False)
    """
    length = column.type.length if isinstance(column.type, String) else None
    return length is None or len(value) <= length


def cut_to(column: Column[Any], value: str) -> str:
    """``value`` cut to the string column's length (in characters, as PostgreSQL counts).

    Example:
        >>> from ..models import tool_calls
        >>> cut_to(tool_calls.c.name, "Shell")
        'Shell'
    """
    if fits(column, value):
        return value
    length = column.type.length if isinstance(column.type, String) else None
    return value[:length]


def session_or_none(value: str | None) -> str | None:
    """The agent's session id if the session columns hold it, else ``None``: a longer one is
    no id the agent could resume (its ids are UUIDs), so it is not kept, as if the agent
    had given none (the events keep it).

    Example:
        >>> session_or_none("8ef40118-8378-436d-8ba8-2436b19cc877")
        '8ef40118-8378-436d-8ba8-2436b19cc877'
        >>> session_or_none("s" * 300) is None
        True
    """
    from ..models import chats, runs

    if value is None or not (fits(runs.c.session_id, value) and fits(chats.c.session_id, value)):
        return None
    return value
