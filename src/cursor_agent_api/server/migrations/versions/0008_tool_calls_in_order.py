"""A chat's tool calls in their order: the index ``ix_tool_calls_chat_order`` on
``tool_calls (chat_id, coalesce(started_seq, completed_seq, 0), idx)``, which replaces
``ix_tool_calls_chat_id`` (its first column).

``GET /api/chats/{id}/tool-calls`` comes a page at a time, in the order the calls started
(the seq of the record that first stored each call, then its index in the turn:
``store/turn_state.py``'s ``CALL_PLACE``): each page is read from this index from where it
starts, with no sort of the chat's calls.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``ix_tool_calls_chat_order``; drop ``ix_tool_calls_chat_id``, which it covers."""
    op.create_index(
        "ix_tool_calls_chat_order",
        "tool_calls",
        ["chat_id", sa.text("coalesce(started_seq, completed_seq, 0)"), "idx"],
    )
    op.drop_index("ix_tool_calls_chat_id", "tool_calls")


def downgrade() -> None:
    """Back to ``ix_tool_calls_chat_id`` alone."""
    op.create_index("ix_tool_calls_chat_id", "tool_calls", ["chat_id"])
    op.drop_index("ix_tool_calls_chat_order", "tool_calls")
