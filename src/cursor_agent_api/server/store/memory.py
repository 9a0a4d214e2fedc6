"""The process's memory around big values: glibc told to map them apart and give them back.

Hand-written (no library does it); a no-op outside glibc.

Example:
    >>> BIG_VALUE
    1048576
"""

from __future__ import annotations

import sys
from typing import Any

BIG_VALUE = 1024 * 1024
"""A record over this many bytes is written, or read whole, one at a time (memory)."""


def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim  # noqa: B018 - glibc only (musl has none)
        libc.mallopt  # noqa: B018
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _libc()
_M_MMAP_THRESHOLD = -3


def tune_memory() -> None:
    """Make glibc give every block over :data:`BIG_VALUE` its own mapping, returned to the OS
    as soon as it is freed (by default the threshold grows with the blocks freed, and freed
    blocks of tens of MB stay in the process). Called once by the server. A no-op elsewhere.

    Example:
        >>> tune_memory()
    """
    if _LIBC is not None:
        _LIBC.mallopt(_M_MMAP_THRESHOLD, BIG_VALUE)


def release_memory() -> None:
    """Give the memory freed after a big value back to the OS (glibc's ``malloc_trim``).

    Hand-written because no library does this: glibc keeps freed blocks in its arenas (the
    process's RSS stays at its peak); trimming after each value over :data:`BIG_VALUE`
    keeps the RSS near what is really in use. A no-op elsewhere.

    Example:
        >>> release_memory()
    """
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
