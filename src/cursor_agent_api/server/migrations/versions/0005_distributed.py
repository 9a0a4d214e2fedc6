"""Distributed mode: runs name their job and worker; PostgreSQL gets the job queue and NOTIFY.

* ``runs.job_id`` / ``runs.queue``: the Procrastinate job that carries the run and its queue;
  ``runs.worker`` / ``runs.worker_id``: the worker that ran it (its name, which is also its
  affinity queue, and Procrastinate's id of it, whose heartbeat says whether it lives).
* On PostgreSQL: Procrastinate's schema (the queue lives in the same database), and a
  trigger that notifies ``cursor_agent_api_events`` with ``"<chat> <first seq> <last seq>"``
  after each insert of records (ids only; delivered at commit), for the API servers'
  :mod:`~cursor_agent_api.server.notify` relay.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

NOTIFY_EVENTS = [
    # one notification per chat per insert statement, with the seqs it wrote, sent at commit;
    # the channel is the one the API servers listen on (server/notify.py)
    """
    CREATE OR REPLACE FUNCTION cursor_agent_api_notify_events() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify('cursor_agent_api_events', chat_id || ' ' || min(seq) || ' ' || max(seq))
           FROM new_rows GROUP BY chat_id;
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
"""The trigger that notifies ``cursor_agent_api_events`` of new records (``events`` names its
chat by its id here: migration 0006 makes it again for the table it rebuilds)."""


def upgrade() -> None:
    """Add the run columns; on PostgreSQL, the queue's schema and the NOTIFY trigger."""
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("job_id", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("queue", sa.String(200), nullable=True))
        batch.add_column(sa.Column("worker", sa.String(200), nullable=True))
        batch.add_column(sa.Column("worker_id", sa.BigInteger(), nullable=True))
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    # Procrastinate's own schema, as the installed Procrastinate ships it
    from cursor_agent_api.server.store.queue_schema import apply_queue_schema

    apply_queue_schema(bind)
    for statement in NOTIFY_EVENTS:
        op.execute(statement)


def downgrade() -> None:
    """Drop the trigger and the run columns (Procrastinate's tables are left in place)."""
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS events_notify ON events")
        op.execute("DROP FUNCTION IF EXISTS cursor_agent_api_notify_events()")
    with op.batch_alter_table("runs") as batch:
        for name in ("worker_id", "worker", "queue", "job_id"):
            batch.drop_column(name)
