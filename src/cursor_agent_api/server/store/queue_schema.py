"""The job queue's schema in the server's PostgreSQL database, applied by our migrations.

Procrastinate ships its schema as one SQL script (:meth:`SchemaManager.get_schema`);
migration ``0005`` runs it once (when the tables are not there yet), on the connection
Alembic migrates with, in the same transaction. The same migration adds the trigger
that notifies the API servers of new records (:func:`notify_trigger_sql`).

Example:
    >>> EVENTS_CHANNEL
    'cursor_agent_api_events'
    >>> any("pg_notify" in s for s in notify_trigger_sql())
    True
"""

from __future__ import annotations

from typing import Any

EVENTS_CHANNEL = "cursor_agent_api_events"
"""The channel every commit of records notifies: payload ``"<chat id> <first seq> <last seq>"``."""


def notify_trigger_sql(*, keyed: bool = True) -> list[str]:
    """The statements that make every insert of records notify :data:`EVENTS_CHANNEL`.

    A statement-level trigger with a transition table: one notification per chat per
    insert statement, with the seqs it wrote, sent by PostgreSQL when the transaction
    commits (never for a rolled-back one). ``keyed``: ``events`` names its chat by
    ``chats.num`` (migration 0006; before it, by the chat's id, ``keyed=False``); the
    notification always carries the chat's public id.
    """
    if keyed:
        rows = "new_rows n JOIN chats c ON c.num = n.chat_key GROUP BY c.id"
        chat = "c.id"
    else:
        rows, chat = "new_rows GROUP BY chat_id", "chat_id"
    return [
        f"""
        CREATE OR REPLACE FUNCTION cursor_agent_api_notify_events() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_notify('{EVENTS_CHANNEL}', {chat} || ' ' || min(seq) || ' ' || max(seq))
               FROM {rows};
            RETURN NULL;
        END;
        $$
        """,
        "DROP TRIGGER IF EXISTS events_notify ON events",
        """
        CREATE TRIGGER events_notify AFTER INSERT ON events
        REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION cursor_agent_api_notify_events()
        """,
    ]


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
