"""The chats in their order: ``ix_chats_recent`` on ``chats (updated_ms, id)``.

``GET /api/chats`` lists the chats most recently active first (``updated_ms``, then ``id``,
both descending) a page at a time; a page from a cursor (``before``: the ``updated_ms`` and
``id`` of the previous page's last chat) is read from this index from where it starts, with
no sort of all the chats.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``ix_chats_recent``."""
    op.create_index("ix_chats_recent", "chats", ["updated_ms", "id"])


def downgrade() -> None:
    """Drop ``ix_chats_recent``."""
    op.drop_index("ix_chats_recent", "chats")
