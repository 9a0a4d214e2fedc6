"""A PostgreSQL ``LISTEN`` on one channel that comes back when its connection is lost.

The listeners of the distributed mode are each one of these: the API servers' relay of
new records (:class:`.notify.Relay`), their listener for logouts
(:class:`.session_watch.SessionListener`) and the workers' answers to ACP requests
(:class:`.dispatch.answers.AnswerListener`). What they share lives here:

* **the connection**, and the queue its notifications go to (:attr:`PgListener.wake`;
  ``None`` there means the connection ended). Each connection has a queue of its own: the
  end of a connection that was given up (closed after a failed ping, which ends it again)
  never reaches the next one;
* **the ping**: a connection that stays quiet for ``ping_interval`` seconds must answer
  ``SELECT 1`` within as long (:data:`PING_LEAST_WAIT` at least: a short interval must not
  take a loaded machine's slow answer for a lost connection); one that does not (a host
  that stopped answering, a firewall that dropped the connection without a word) is given
  up and opened again;
* **the reconnecting**, with a backoff up to 5 s, one log line when the connection is
  lost and one when it is back (the retries that fail meanwhile are debug lines); and
  closing;
* **its state** for ``GET /api/health`` (:meth:`PgListener.view`): connected or not, since
  when not, how many times it came back, the last failure (no SQL, no values).

A subclass says what to do with the notifications (:meth:`PgListener.received`), and if
it must, what to do on a quiet interval (:meth:`PgListener.idle`) and once a lost
connection is back (:meth:`PgListener.reconnected`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import anyio

from .store import Store, describe_error, now_ms

logger = logging.getLogger("cursor_agent_api.server")

MAX_BACKOFF = 5.0
"""The longest wait, in seconds, between two attempts to connect again."""

PING_INTERVAL = 5.0
"""Seconds a LISTEN connection may stay quiet before it is pinged (and the ping's timeout)."""

PING_LEAST_WAIT = 2.0
"""The ping's timeout, in seconds, when the interval is shorter."""


class PgListener:
    """One LISTEN connection and the task that keeps it (see the module's text)."""

    def __init__(self, store: Store, channel: str, *, label: str,
                 application_name: str | None = None,
                 ping_interval: float = PING_INTERVAL) -> None:
        """Listen on ``channel`` of ``store``'s database (PostgreSQL). ``label`` names the
        connection in the logs (``"the LISTEN connection for answers"``)."""
        self.store = store
        self.channel = channel
        self.label = label
        self.application_name = application_name
        self.ping_interval = ping_interval
        self.wake: asyncio.Queue[str | None] = asyncio.Queue()
        """The current connection's notifications, in order; ``None`` once it has ended."""
        self.reconnects = 0
        """How many times a lost connection came back."""
        self.connected = False
        """Whether the connection is up (False from its failure until it is back)."""
        self.down_since_ms: int | None = None
        self.last_error: str | None = None
        """The last failure of the connection (:func:`~.store.describe_error`), kept once it is back."""
        self._task: asyncio.Task[None] | None = None
        self._conn: Any = None

    async def open(self, task_name: str) -> None:
        """Connect (no notification sent after this returns is missed), then keep listening."""
        conn = await self._connect()
        try:
            await self.opened()
        except BaseException:
            await self._close_conn(failed=True)  # (its database may not answer: not waited for)
            raise
        self.connected = True
        self._task = asyncio.create_task(self._run(conn), name=task_name)

    def view(self) -> dict[str, Any]:
        """The connection's state, for ``GET /api/health``.

        Example:
            >>> PgListener(None, "ch", label="the LISTEN connection").view()  # type: ignore[arg-type]
            {'connected': False, 'down_since_ms': None, 'reconnects': 0, 'last_error': None}
        """
        return {"connected": self.connected, "down_since_ms": self.down_since_ms,
                "reconnects": self.reconnects, "last_error": self.last_error}

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

    async def received(self, payloads: list[str]) -> None:
        """The notifications that came together, in order."""
        raise NotImplementedError

    async def idle(self) -> None:
        """Called after each quiet ``ping_interval`` whose ping was answered."""

    # ---- the connection -----------------------------------------------------------------

    async def listen(self, conn: Any) -> None:
        """Take the notifications of ``conn`` until it ends (return) or fails (raise: its
        ping was not answered within ``ping_interval``)."""
        wake, interval = self.wake, self.ping_interval
        while True:
            # anyio's scope, not asyncio.wait_for: before Python 3.12 wait_for can lose the
            # cancel that stops this loop (tests/client/test_cancel_races.py)
            with anyio.move_on_after(interval) as waited:
                first = await wake.get()
            if waited.cancelled_caught:
                with anyio.fail_after(max(interval, PING_LEAST_WAIT)):
                    await self.store.ping(conn)  # still there?
                await self.idle()
                continue
            batch = [first]
            while not wake.empty():
                batch.append(wake.get_nowait())
            if None in batch or conn.is_closed():
                return
            await self.received([p for p in batch if p is not None])

    async def _connect(self) -> Any:
        wake: asyncio.Queue[str | None] = asyncio.Queue()  # this connection's own
        conn = await self.store.listen(self.channel, wake.put_nowait, lambda: wake.put_nowait(None),
                                       application_name=self.application_name)
        self.wake, self._conn = wake, conn
        return conn

    async def _close_conn(self, *, failed: bool = False) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if failed:  # it did not answer: no goodbye to wait for
            conn.terminate()
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(conn.close(), 5)

    async def _run(self, conn: Any) -> None:
        delay = 0.1
        while True:
            try:
                if conn is None:
                    conn = await self._connect()
                    await self.reconnected()
                    self.reconnects += 1
                    self.connected, self.down_since_ms = True, None
                    logger.warning("%s is back", self.label)
                delay = 0.1
                await self.listen(conn)
                self.last_error = "the connection was lost"  # (it ended without an error)
                logger.warning("%s was lost; reconnecting", self.label)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                self.last_error = describe_error(e)
                # said once as it fails; each retry that fails too (the database away for a
                # while: every 0.1 s … MAX_BACKOFF s) is a debug line
                log = logger.warning if self.connected else logger.debug
                log("%s failed (%s); reconnecting", self.label, self.last_error)
            if self.connected:
                self.connected, self.down_since_ms = False, now_ms()
            conn = None
            await self._close_conn(failed=True)
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF)
