"""PostgreSQL's notifications: ``NOTIFY`` a channel, and the ``LISTEN`` connection (asyncpg's
own, outside the engine's pool: a notification is delivered on the connection that listens)
with its liveness check. What a notification means is the listener's business
(:mod:`..pg_listen`, :mod:`..notify`, :mod:`..dispatch.answers`).

Example:
    >>> str(_NOTIFY)
    'SELECT pg_notify(:channel, :payload)'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
from sqlalchemy import text

from ...database_urls import libpq_url
from .engine import StoreEngine

_NOTIFY = text("SELECT pg_notify(:channel, :payload)")


class Notifications(StoreEngine):
    """The notifications of :class:`~cursor_agent_api.server.store.Store` (PostgreSQL only)."""

    async def notify(self, channel: str, payload: str) -> None:
        """Send ``payload`` on ``channel`` (``pg_notify``: delivered once committed, here at once)."""
        async with self.begin() as conn:
            await conn.execute(_NOTIFY, {"channel": channel, "payload": payload})

    async def listen(
        self,
        channel: str,
        on_payload: Callable[[str], object],
        on_end: Callable[[], object],
        *,
        application_name: str | None = None,
    ) -> Any:
        """A new connection that LISTENs on ``channel``: each notification's payload goes to
        ``on_payload``, the connection's end to ``on_end``. Returns it (an asyncpg connection:
        :meth:`ping` it, ``close()`` it, ``is_closed()`` says whether it ended)."""
        import asyncpg  # type: ignore[import-untyped]

        settings = {"application_name": application_name} if application_name else None
        conn = await asyncpg.connect(libpq_url(self.url), server_settings=settings,
                                     timeout=self.connect_timeout,
                                     connection_class=self._kept_alive)  # (KeepAlive)
        try:
            # (a host silent since the connection was made: given up as a connection that
            # did not open; anyio's scope: asyncio.wait_for can lose a cancel before 3.12)
            with anyio.fail_after(self.connect_timeout):
                await conn.add_listener(channel, lambda _c, _p, _ch, payload: on_payload(payload))
        except BaseException:
            conn.terminate()
            raise
        conn.add_termination_listener(lambda _c: on_end())
        return conn

    @staticmethod
    async def ping(conn: Any) -> None:
        """Check that a :meth:`listen` connection still answers (raises when it does not)."""
        await conn.fetchval("SELECT 1")
