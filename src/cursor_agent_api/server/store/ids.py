"""The server's ids and timestamps: a new chat's or run's id, the time in milliseconds.

Example:
    >>> len(new_id()), now_ms() > 0
    (36, True)
"""

from __future__ import annotations

import time
import uuid


def now_ms() -> int:
    """Milliseconds since the epoch (the server's timestamps).

    Example:
        >>> now_ms() > 1_700_000_000_000
        True
    """
    return time.time_ns() // 1_000_000


def new_id() -> str:
    """A new random id for a chat or a run (a UUID4 string).

    Example:
        >>> len(new_id())
        36
    """
    return str(uuid.uuid4())
