"""Compact events: the log names its chat and run by an integer key, and has one index.

* ``chats.num`` / ``runs.num``: each row's integer key (unique; on PostgreSQL from the
  sequences ``chats_num_seq`` / ``runs_num_seq``, on SQLite one more than the largest).
* ``events`` is rebuilt as ``(chat_key, seq, run_key, ts_ms, source, type, subtype,
  payload, raw)`` with the primary key ``(chat_key, seq)``: no row id, no ``(chat_id, seq)``
  index of 36-character ids, no ``run_id`` index (every read of a run's records is also a
  read of its chat's: the key serves it), only a partial index of the server's records by
  run (requests and answers). On SQLite a ``WITHOUT ROWID`` table. ``raw`` holds bytes
  (an agent's line as it came) and ``payload`` may be NULL (the line is then the event's
  data, as :mod:`..models` says); every row is copied as it was (both forms are read).
* On PostgreSQL the NOTIFY trigger is made again on the new table (it joins ``chats`` for
  the chat's public id).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_COLUMNS = "seq, ts_ms, source, type, subtype, payload, raw"

NOTIFY_EVENTS = [
    # as migration 0005's, for the rebuilt table: it names its chat by ``chats.num``, and the
    # notification carries the chat's public id
    """
    CREATE OR REPLACE FUNCTION cursor_agent_api_notify_events() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify('cursor_agent_api_events', c.id || ' ' || min(seq) || ' ' || max(seq))
           FROM new_rows n JOIN chats c ON c.num = n.chat_key GROUP BY c.id;
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


def _add_num(table: str, postgresql: bool) -> None:
    with op.batch_alter_table(table) as batch:
        batch.add_column(sa.Column("num", sa.BigInteger(), nullable=True))
    if postgresql:
        op.execute(f"CREATE SEQUENCE {table}_num_seq OWNED BY {table}.num")
        op.execute(f"UPDATE {table} SET num = nextval('{table}_num_seq')")
    else:
        op.execute(f"UPDATE {table} SET num = rowid")
    op.create_index(f"uq_{table}_num", table, ["num"], unique=True)


def upgrade() -> None:
    """Give chats and runs their keys, then copy the log into its compact table."""
    postgresql = op.get_bind().dialect.name == "postgresql"
    _add_num("chats", postgresql)
    _add_num("runs", postgresql)
    op.create_table(
        "events_compact",
        sa.Column(
            "chat_key", sa.BigInteger(), sa.ForeignKey("chats.num", name="fk_events_chat"), nullable=False
        ),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("run_key", sa.BigInteger(), sa.ForeignKey("runs.num", name="fk_events_run"), nullable=True),
        sa.Column("ts_ms", sa.BigInteger(), nullable=False),
        sa.Column("source", sa.String(16), nullable=True),
        sa.Column("type", sa.String(64), nullable=True),
        sa.Column("subtype", sa.String(64), nullable=True),
        sa.Column("payload", sa.JSON(), nullable=True),
        sa.Column("raw", sa.LargeBinary(), nullable=True),
        sa.PrimaryKeyConstraint("chat_key", "seq", name="pk_events"),
        sqlite_with_rowid=False,
    )
    # the line's text as bytes (UTF-8), in key order
    raw = "convert_to(e.raw, 'UTF8')" if postgresql else "CAST(e.raw AS BLOB)"
    kept = ", ".join("e." + c for c in _COLUMNS.split(", ")[:-1])
    op.execute(
        f"INSERT INTO events_compact (chat_key, run_key, {_COLUMNS}) "
        f"SELECT c.num, r.num, {kept}, {raw} FROM events e "
        "JOIN chats c ON c.id = e.chat_id LEFT JOIN runs r ON r.id = e.run_id ORDER BY c.num, e.seq"
    )
    if postgresql:
        op.execute("DROP TRIGGER IF EXISTS events_notify ON events")
    op.drop_table("events")
    op.rename_table("events_compact", "events")
    where = sa.text("source = 'server'")
    op.create_index(
        "ix_events_server_runs", "events", ["chat_key", "run_key"], sqlite_where=where, postgresql_where=where
    )
    if postgresql:
        for statement in NOTIFY_EVENTS:
            op.execute(statement)


def downgrade() -> None:
    """Refused: downgrades are not supported (docs/server.md, Storage).

    Since this migration the server no longer stores what older versions read (a tool call's
    output, an agent record's derived fields): a database taken back below it would show
    them empty. Go back by restoring the copy of the database made before the upgrade.
    """
    raise RuntimeError(
        "downgrading the database below migration 0006 is not supported: older versions "
        "would find tool call outputs and agent records' fields missing. Restore the copy of "
        "the database made before the upgrade (docs/server.md, Storage) instead."
    )
