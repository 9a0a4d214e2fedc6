"""The job queue's schema in the server's PostgreSQL database, applied by our migrations.

Procrastinate ships its schema as one SQL script (:meth:`SchemaManager.get_schema`);
migration ``0005`` runs it once (when the tables are not there yet), on the connection
Alembic migrates with, in the same transaction. The trigger that notifies the API servers
of new records on :data:`EVENTS_CHANNEL` is the migrations' own (``0005``, made again by
``0006``): a migration keeps the SQL it ran.

Example:
    >>> EVENTS_CHANNEL
    'cursor_agent_api_events'
"""

from __future__ import annotations

from typing import Any

EVENTS_CHANNEL = "cursor_agent_api_events"
"""The channel every commit of records notifies: payload ``"<chat id> <first seq> <last seq>"``
(the trigger of migrations 0005 and 0006 names it as written there)."""

CHAT_DELETED = "deleted"
"""What follows the chat's id on :data:`EVENTS_CHANNEL` when the chat was deleted
(:meth:`~.chat_deletes.ChatDeletes.delete_chat`): ``"<chat id> deleted"``."""


def apply_queue_schema(sync_connection: Any) -> bool:
    """Create Procrastinate's tables and functions unless they exist; True if it did.

    ``sync_connection`` is the SQLAlchemy connection Alembic migrates with (asyncpg under
    it). The script has many statements and PL/pgSQL bodies: it runs as one simple query
    on the driver's connection (SQLAlchemy would prepare it, one statement at a time).
    """
    from sqlalchemy import text

    present = sync_connection.execute(text("SELECT to_regclass('procrastinate_jobs')")).scalar()
    if present is not None:
        return False
    from procrastinate.schema import SchemaManager
    from sqlalchemy import util

    await_ = getattr(util, "await_", None) or util.await_only
    driver = sync_connection.connection.driver_connection
    await_(driver.execute(SchemaManager.get_schema()))
    return True
