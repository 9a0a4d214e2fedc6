"""A chat's runs in their order: the index ``ix_runs_chat_order`` on ``runs (chat_id,
created_ms, id)``, which replaces ``ix_runs_chat_id`` (its first column).

Every page of ``GET /api/chats/{id}/runs`` and ``GET …/turns`` reads the ids of the chat's
newest runs before a given one, in the order ``created_ms``, then ``id`` (``store/run_order.py``);
with only ``ix_runs_chat_id`` the database found the chat's runs and sorted all of them for
each page (a 32,769-run chat: 32,769 rows sorted per page). With this index it reads the page's
ids in order from the index alone, from where the page starts (``(created_ms, id) < (…)``).
The chat's latest run (``GET /api/chats``, ``GET /api/chats/{id}``) comes from it too.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``ix_runs_chat_order``; drop ``ix_runs_chat_id``, which it covers."""
    op.create_index("ix_runs_chat_order", "runs", ["chat_id", "created_ms", "id"])
    op.drop_index("ix_runs_chat_id", "runs")


def downgrade() -> None:
    """Back to ``ix_runs_chat_id`` alone."""
    op.create_index("ix_runs_chat_id", "runs", ["chat_id"])
    op.drop_index("ix_runs_chat_order", "runs")
