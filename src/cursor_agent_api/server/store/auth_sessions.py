"""The browser sessions' rows (``auth_sessions``, see :mod:`..auth`): a session stored by the
hash of its id, read, its last use written, deleted; expired ones deleted as a new one comes.

Example:
    >>> import asyncio, tempfile
    >>> from cursor_agent_api.server.store import Store
    >>> async def demo() -> tuple[int, int, bool]:
    ...     store = Store(f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/db.sqlite3")
    ...     await store.start()
    ...     await store.add_auth_session("k", "fp", 1000, used_before_ms=0, created_before_ms=0)
    ...     await store.touch_auth_session("k", 2000)
    ...     row = await store.auth_session("k")
    ...     await store.delete_auth_session("k")
    ...     gone = await store.auth_session("k") is None
    ...     await store.close()
    ...     return row["created_ms"], row["last_used_ms"], gone
    >>> asyncio.run(demo())
    (1000, 2000, True)
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, insert, or_, select, update

from ..models import auth_sessions
from .engine import StoreEngine
from .keys import _row_dict


class AuthSessions(StoreEngine):
    """The browser sessions of :class:`~cursor_agent_api.server.store.Store`."""

    async def add_auth_session(
        self, key: str, token_fp: str, now_ms: int, *, used_before_ms: int, created_before_ms: int
    ) -> None:
        """Store a session (``key``: the hash of its id; ``token_fp``: the fingerprint of the
        token it is made with), and delete those last used before ``used_before_ms`` or
        created before ``created_before_ms`` (expired), in one transaction."""
        async with self.transaction() as conn:
            await conn.execute(
                delete(auth_sessions).where(
                    or_(
                        auth_sessions.c.last_used_ms < used_before_ms,
                        auth_sessions.c.created_ms < created_before_ms,
                    )
                )
            )
            await conn.execute(
                insert(auth_sessions).values(
                    id_hash=key, token_fp=token_fp, created_ms=now_ms, last_used_ms=now_ms
                )
            )

    async def auth_session(self, key: str) -> dict[str, Any] | None:
        """The session stored under ``key`` (the hash of its id), or ``None``."""
        async with self.connect() as conn:
            row = (await conn.execute(select(auth_sessions).where(auth_sessions.c.id_hash == key))).first()
        return _row_dict(row)

    async def touch_auth_session(self, key: str, now_ms: int) -> None:
        """Note that the session ``key`` was used at ``now_ms`` (its sliding expiry)."""
        async with self.transaction() as conn:
            await conn.execute(
                update(auth_sessions).where(auth_sessions.c.id_hash == key).values(last_used_ms=now_ms)
            )

    async def delete_auth_session(self, key: str) -> None:
        """Delete the session ``key`` (unknown keys are ignored)."""
        async with self.transaction() as conn:
            await conn.execute(delete(auth_sessions).where(auth_sessions.c.id_hash == key))
