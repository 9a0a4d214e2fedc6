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
        from cursor_agent_api.server.store.queue_schema import notify_trigger_sql

        for statement in notify_trigger_sql(keyed=True):
            op.execute(statement)


def downgrade() -> None:
    """Back to ``events`` keyed by a row id, naming chats and runs by their ids."""
    postgresql = op.get_bind().dialect.name == "postgresql"
    big_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    op.create_table(
        "events_wide",
        sa.Column("id", big_id, primary_key=True, autoincrement=True),
        sa.Column("chat_id", sa.String(36), sa.ForeignKey("chats.id"), nullable=False),
        sa.Column("run_id", sa.String(36), sa.ForeignKey("runs.id"), nullable=True),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("ts_ms", sa.BigInteger(), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("subtype", sa.String(64), nullable=True),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("raw", sa.Text(), nullable=True),
        sa.UniqueConstraint("chat_id", "seq", name="uq_events_chat_seq"),
    )
    # a line stored alone gets its source, type and subtype (classified as when it was read)
    from cursor_agent_api.server.store import EventRecord

    bind = op.get_bind()
    alone = sa.text("SELECT seq, chat_key, raw FROM events WHERE payload IS NULL AND raw IS NOT NULL")
    fill = sa.text(
        "UPDATE events SET source = 'agent', type = :t, subtype = :st WHERE chat_key = :c AND seq = :s"
    )
    for seq, chat_key, raw in bind.execute(alone).all():
        row = {"seq": seq, "chat_id": "", "run_id": None, "ts_ms": 0, "source": "agent", "type": None,
               "subtype": None, "payload": None, "raw": raw}
        rec = EventRecord.from_row(type("Row", (), {"_mapping": row})())
        bind.execute(fill, {"t": rec.type, "st": rec.subtype, "c": chat_key, "s": seq})
    # a line stored alone gets its payload back ({"type", "data"}; raw NULL)
    if postgresql:
        text = "convert_from(e.raw, 'UTF8')"
        payload = f"COALESCE(e.payload, json_build_object('type', e.type, 'data', ({text})::json))"
    else:
        text = "CAST(e.raw AS TEXT)"
        payload = f"COALESCE(e.payload, json_object('type', e.type, 'data', json({text})))"
    raw = f"CASE WHEN e.payload IS NULL THEN NULL ELSE {text} END"
    kept = ", ".join("e." + c for c in _COLUMNS.split(", ")[:-2])
    op.execute(
        f"INSERT INTO events_wide (chat_id, run_id, {_COLUMNS}) "
        f"SELECT c.id, r.id, {kept}, {payload}, {raw} FROM events e "
        "JOIN chats c ON c.num = e.chat_key LEFT JOIN runs r ON r.num = e.run_key ORDER BY c.id, e.seq"
    )
    if postgresql:
        op.execute("DROP TRIGGER IF EXISTS events_notify ON events")
    op.drop_index("ix_events_server_runs", "events")
    op.drop_table("events")
    op.rename_table("events_wide", "events")
    op.create_index("ix_events_run_id", "events", ["run_id"])
    for table in ("runs", "chats"):
        op.drop_index(f"uq_{table}_num", table)
        with op.batch_alter_table(table) as batch:
            batch.drop_column("num")
    if postgresql:
        from cursor_agent_api.server.store.queue_schema import notify_trigger_sql

        for statement in notify_trigger_sql(keyed=False):
            op.execute(statement)
