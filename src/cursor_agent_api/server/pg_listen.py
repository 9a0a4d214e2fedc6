"""A PostgreSQL ``LISTEN`` on one channel that comes back when its connection is lost.

Both listeners of the distributed mode are one of these: the API servers' relay of new
records (:class:`.notify.Relay`) and the workers' answers to ACP requests
(:class:`.dispatch.answers.AnswerListener`). What they share lives here: the asyncpg
connection (notifications go to :attr:`PgListener.wake`; ``None`` there means the
connection ended), the task that reconnects with a backoff up to 5 s, and closing. A
subclass says what to do with the notifications (:meth:`PgListener.listen`) and, if it
must, what to do once the connection is back (:meth:`PgListener.reconnected`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from .store import Store, describe_error

logger = logging.getLogger("cursor_agent_api.server")

MAX_BACKOFF = 5.0
"""The longest wait, in seconds, between two attempts to connect again."""


class PgListener:
    """One LISTEN connection and the task that keeps it (see the module's text)."""

    def __init__(self, store: Store, channel: str, *, label: str,
                 application_name: str | None = None) -> None:
        """Listen on ``channel`` of ``store``'s database (PostgreSQL). ``label`` names the
        connection in the logs (``"the LISTEN connection for answers"``)."""
        self.store = store
        self.channel = channel
        self.label = label
        self.application_name = application_name
        self.wake: asyncio.Queue[str | None] = asyncio.Queue()
        """Each notification's payload, in order; ``None`` once the connection has ended."""
        self._task: asyncio.Task[None] | None = None
        self._conn: Any = None

    async def open(self, task_name: str) -> None:
        """Connect (no notification sent after this returns is missed), then keep listening."""
        conn = await self._connect()
        await self.opened()
        self._task = asyncio.create_task(self._run(conn), name=task_name)

    async def close(self) -> None:
        """Stop listening."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self._close_conn()

    # ---- what a listener does -----------------------------------------------------------

    async def opened(self) -> None:
        """Called once connected by :meth:`open`, before the task starts."""

    async def reconnected(self) -> None:
        """Called when a lost connection is back, before listening again."""

    async def listen(self, conn: Any) -> None:
        """Take the notifications from :attr:`wake` until the connection is lost (return)
        or fails (raise)."""
        raise NotImplementedError

    # ---- the connection -----------------------------------------------------------------

    async def _connect(self) -> Any:
        wake = self.wake
        conn = await self.store.listen(self.channel, wake.put_nowait, lambda: wake.put_nowait(None),
                                       application_name=self.application_name)
        self._conn = conn
        return conn

    async def _close_conn(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), 5)

    async def _run(self, conn: Any) -> None:
        delay = 0.1
        while True:
            try:
                if conn is None:
                    conn = await self._connect()
                    await self.reconnected()
                    logger.warning("%s is back", self.label)
                delay = 0.1
                await self.listen(conn)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                logger.warning("%s failed (%s); reconnecting", self.label, describe_error(e))
            conn = None
            await self._close_conn()
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF)
