"""Which WebSockets hold which browser session, so that the end of a session ends them.

A WebSocket opened with a session cookie (not with the token) takes a :class:`SessionWatch`
from :class:`SessionWatches` (the :class:`~.auth.Auth` of its server keeps one) and gives it
back when it closes. When the session ends, its watches are ended:

* at once by a logout on this server (:meth:`~.auth.Auth.revoke_session`), and, when the
  database is PostgreSQL, by a logout on any server that shares it: the logout notifies
  the channel :data:`SESSIONS_CHANNEL` with the session's key (``sha256`` of its id, as
  stored; never the id) and every server's :class:`SessionListener` ends its own watches;
* otherwise at the socket's next check (every ``session_check_interval`` seconds): an
  expired session, a row deleted by other means, a notification lost with its connection.

A socket whose watch ended sends nothing more but its ``error`` and closes (code 4401,
:mod:`.websocket`).

Example:
    >>> watches = SessionWatches()
    >>> a, b = watches.add("k1"), watches.add("k1")
    >>> other = watches.add("k2")
    >>> watches.end("k1"), a.ended.is_set(), b.ended.is_set(), other.ended.is_set()
    (2, True, True, False)
    >>> watches.remove(a); watches.remove(b); sorted(watches.held())
    ['k2']
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from .pg_listen import PgListener

if TYPE_CHECKING:
    from .auth import Auth

logger = logging.getLogger("cursor_agent_api.server")

SESSIONS_CHANNEL = "cursor_agent_api_sessions"
"""The PostgreSQL channel a logout notifies with the session's key."""

SESSIONS_APPLICATION_NAME = "cursor-agent-api-sessions"
"""The session listener's ``application_name`` (shown in ``pg_stat_activity``)."""


class SessionWatch:
    """One socket's hold on the session ``key``: :attr:`ended` is set when the session ends."""

    __slots__ = ("ended", "key")

    def __init__(self, key: str) -> None:
        self.key = key
        self.ended = asyncio.Event()


class SessionWatches:
    """The watches of one server, by session key."""

    def __init__(self) -> None:
        self._by_key: dict[str, set[SessionWatch]] = {}

    def add(self, key: str) -> SessionWatch:
        """A new watch on the session ``key`` (give it back with :meth:`remove`)."""
        watch = SessionWatch(key)
        self._by_key.setdefault(key, set()).add(watch)
        return watch

    def remove(self, watch: SessionWatch) -> None:
        """Forget ``watch`` (its socket closed)."""
        held = self._by_key.get(watch.key)
        if held is not None:
            held.discard(watch)
            if not held:
                del self._by_key[watch.key]

    def end(self, key: str) -> int:
        """End every watch on the session ``key``; returns how many there were."""
        held = self._by_key.get(key, set())
        for watch in held:
            watch.ended.set()
        return len(held)

    def held(self) -> list[str]:
        """The sessions that sockets hold now."""
        return list(self._by_key)


class SessionListener(PgListener):
    """LISTEN on :data:`SESSIONS_CHANNEL`: a logout on any server ends this server's watches."""

    def __init__(self, auth: Auth) -> None:
        super().__init__(auth.store, SESSIONS_CHANNEL, label="the LISTEN connection for sessions",
                         application_name=SESSIONS_APPLICATION_NAME,
                         ping_interval=auth.settings.notify_poll_interval)
        self.auth = auth

    async def received(self, payloads: list[str]) -> None:
        for key in payloads:
            self.auth.watches.end(key)

    async def reconnected(self) -> None:
        # a logout while the connection was lost: check every held session now
        for key in self.auth.watches.held():
            if not await self.auth.session_alive(key):
                self.auth.watches.end(key)


__all__ = ["SESSIONS_CHANNEL", "SessionListener", "SessionWatch", "SessionWatches"]
