"""Folded turns: tool calls by their index in the turn, the turn's texts, ``runs.turn``.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    """Key ``tool_calls`` by ``(run_id, idx)`` (ids may repeat in a turn); add ``turn_texts``
    and ``runs.turn``. Older calls get their index from their order of insertion."""
    with op.batch_alter_table("tool_calls") as batch:
        batch.add_column(sa.Column("idx", sa.Integer(), nullable=True))
    op.execute(
        "UPDATE tool_calls SET idx = (SELECT COUNT(*) FROM tool_calls AS t2 "
        "WHERE t2.run_id = tool_calls.run_id AND t2.id < tool_calls.id)"
    )
    with op.batch_alter_table("tool_calls") as batch:
        batch.alter_column("idx", existing_type=sa.Integer(), nullable=False)
        batch.drop_constraint("uq_tool_calls_run_call", type_="unique")
        batch.create_unique_constraint("uq_tool_calls_run_idx", ["run_id", "idx"])
    op.create_table(
        "turn_texts",
        sa.Column("id", _BigId, primary_key=True, autoincrement=True),
        sa.Column("chat_id", sa.String(36), sa.ForeignKey("chats.id"), nullable=False),
        sa.Column("run_id", sa.String(36), sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("closed", sa.Boolean(), nullable=False),
        sa.Column("opened_seq", sa.BigInteger(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=True),
        sa.Column("whole_seq", sa.BigInteger(), nullable=True),
        sa.UniqueConstraint("run_id", "kind", "idx", name="uq_turn_texts_run_kind_idx"),
    )
    op.create_index("ix_turn_texts_chat_id", "turn_texts", ["chat_id"])
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("turn", sa.JSON(), nullable=True))


def downgrade() -> None:
    """Back to tool calls keyed by ``(run_id, call_id)`` (a repeated id keeps one row)."""
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("turn")
    op.drop_index("ix_turn_texts_chat_id", "turn_texts")
    op.drop_table("turn_texts")
    op.execute(
        "DELETE FROM tool_calls WHERE id NOT IN (SELECT MAX(id) FROM tool_calls GROUP BY run_id, call_id)"
    )
    with op.batch_alter_table("tool_calls") as batch:
        batch.drop_constraint("uq_tool_calls_run_idx", type_="unique")
        batch.create_unique_constraint("uq_tool_calls_run_call", ["run_id", "call_id"])
        batch.drop_column("idx")
