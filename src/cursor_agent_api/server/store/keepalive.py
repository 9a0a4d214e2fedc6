"""TCP keepalive on every connection to PostgreSQL: a host that stops answering (packets
dropped, the connection still open) is noticed within about ``store_connect_timeout``,
without cutting short a statement the database runs for long (a slow migration, a wait for
another process's lock): the kernel probes an idle connection, and an alive server, however
busy, answers the probes (its kernel does). Linux's ``TCP_USER_TIMEOUT`` bounds the same way
data sent and never acknowledged.

:class:`KeepAlive` derives the timings from ``store_connect_timeout`` (dead after about that
many seconds of silence), for libpq (psycopg: Procrastinate's pool and its LISTEN connection,
:meth:`KeepAlive.libpq`) and for asyncpg (the store's pool and the migrations' connection:
:func:`kept_alive`, asyncpg's ``connection_class``).

Example:
    >>> k = KeepAlive.within(10)
    >>> k.idle, k.interval, k.count, k.user_timeout_ms
    (4, 2, 3, 10000)
    >>> k.libpq()["keepalives_idle"], KeepAlive.within(0.5).idle
    (4, 1)
"""

from __future__ import annotations

import contextlib
import math
import socket
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class KeepAlive:
    """Keepalive probes after ``idle`` seconds of silence, every ``interval`` seconds,
    ``count`` of them unanswered and the connection is dead; data unacknowledged for
    ``user_timeout_ms`` kills it too (Linux)."""

    idle: int
    interval: int
    count: int
    user_timeout_ms: int

    @classmethod
    def within(cls, seconds: float) -> KeepAlive:
        """Settings that declare a silent host dead after about ``seconds`` (``idle +
        interval * count``, in whole seconds, 1 at least each: 3 s at the least)."""
        count = 3
        interval = max(1, math.floor(seconds / 5))
        idle = max(1, math.ceil(seconds) - interval * count)
        return cls(idle, interval, count, max(1000, round(seconds * 1000)))

    @property
    def bound(self) -> int:
        """Seconds of silence after which an idle connection is declared dead."""
        return self.idle + self.interval * self.count

    def libpq(self) -> dict[str, Any]:
        """libpq's connection parameters for it (psycopg's ``kwargs``)."""
        return {"keepalives": 1, "keepalives_idle": self.idle,
                "keepalives_interval": self.interval, "keepalives_count": self.count,
                "tcp_user_timeout": self.user_timeout_ms}

    def apply(self, sock: Any) -> None:
        """Set it on ``sock`` (a TCP socket; a Unix socket is left alone)."""
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for name, value in (("TCP_KEEPIDLE", self.idle), ("TCP_KEEPINTVL", self.interval),
                            ("TCP_KEEPCNT", self.count), ("TCP_USER_TIMEOUT", self.user_timeout_ms)):
            option = getattr(socket, name, None)  # (Linux's; macOS has TCP_KEEPALIVE instead)
            if option is not None:
                sock.setsockopt(socket.IPPROTO_TCP, option, value)


def kept_alive(keepalive: KeepAlive) -> type[Any]:
    """asyncpg's connection class that sets ``keepalive`` on its socket as it opens.

    asyncpg has no option for keepalive, and no public way to a connection's socket (SQLAlchemy
    neither: its pool events and ``async_creator`` give asyncpg's connection, whose transport
    is a private attribute). ``connection_class`` is asyncpg's public parameter; what its
    constructor is given (the protocol, then the transport) is asyncpg's own, unchanged since
    0.18 but undocumented: were it to change, the connection opens without keepalive rather
    than failing (``tests/server/test_keepalive.py`` would fail)."""
    import asyncpg  # type: ignore[import-untyped]

    class KeptAliveConnection(asyncpg.Connection):  # type: ignore[misc]
        def __init__(self, protocol: Any, transport: Any, *args: Any, **kwargs: Any) -> None:
            with contextlib.suppress(AttributeError, OSError):
                sock = transport.get_extra_info("socket")  # (asyncio's public transport API)
                if sock is not None:
                    keepalive.apply(sock)
            super().__init__(protocol, transport, *args, **kwargs)

    return KeptAliveConnection


