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
    from cursor_agent_api.server.store.queue_schema import apply_queue_schema, notify_trigger_sql

    apply_queue_schema(bind)
    for statement in notify_trigger_sql(keyed=False):
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
