"""Initial schema: chats, runs, events, tool calls.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_ACTIVE = sa.text("status IN ('queued', 'running')")


def upgrade() -> None:
    """Create the four tables and their indexes."""
    op.create_table(
        "chats",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("session_id", sa.String(200), nullable=True),
        sa.Column("workspace", sa.Text(), nullable=False),
        sa.Column("model", sa.String(200), nullable=True),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.Column("updated_ms", sa.BigInteger(), nullable=False),
        sa.Column("last_seq", sa.BigInteger(), nullable=False, server_default=sa.text("0")),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("chat_id", sa.String(36), sa.ForeignKey("chats.id"), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("pgid", sa.Integer(), nullable=True),
        sa.Column("proc_start", sa.BigInteger(), nullable=True),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("error_type", sa.String(100), nullable=True),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("usage", sa.JSON(), nullable=True),
        sa.Column("session_id", sa.String(200), nullable=True),
        sa.Column("first_seq", sa.BigInteger(), nullable=True),
        sa.Column("last_seq", sa.BigInteger(), nullable=True),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.Column("started_ms", sa.BigInteger(), nullable=True),
        sa.Column("ended_ms", sa.BigInteger(), nullable=True),
    )
    op.create_index("ix_runs_chat_id", "runs", ["chat_id"])
    op.create_index("ix_runs_status", "runs", ["status"])
    op.create_index(
        "uq_runs_one_active_per_chat",
        "runs",
        ["chat_id"],
        unique=True,
        sqlite_where=_ACTIVE,
        postgresql_where=_ACTIVE,
    )
    op.create_table(
        "events",
        sa.Column("id", _BigId, primary_key=True, autoincrement=True),
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
    op.create_index("ix_events_run_id", "events", ["run_id"])
    op.create_table(
        "tool_calls",
        sa.Column("id", _BigId, primary_key=True, autoincrement=True),
        sa.Column("chat_id", sa.String(36), sa.ForeignKey("chats.id"), nullable=False),
        sa.Column("run_id", sa.String(36), sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("call_id", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("args", sa.JSON(), nullable=False),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("output", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("started_ms", sa.BigInteger(), nullable=True),
        sa.Column("completed_ms", sa.BigInteger(), nullable=True),
        sa.Column("duration_ms", sa.BigInteger(), nullable=True),
        sa.Column("started_seq", sa.BigInteger(), nullable=True),
        sa.Column("completed_seq", sa.BigInteger(), nullable=True),
        sa.UniqueConstraint("run_id", "call_id", name="uq_tool_calls_run_call"),
    )
    op.create_index("ix_tool_calls_chat_id", "tool_calls", ["chat_id"])


def downgrade() -> None:
    """Drop everything (the data goes with it)."""
    op.drop_table("tool_calls")
    op.drop_table("events")
    op.drop_table("runs")
    op.drop_table("chats")
