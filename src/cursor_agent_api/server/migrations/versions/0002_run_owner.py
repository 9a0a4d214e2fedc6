"""Runs remember the server process that owns them (``runs.server_id``).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add ``runs.server_id`` (``host:pid:start-time``; NULL for older runs)."""
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("server_id", sa.String(300), nullable=True))


def downgrade() -> None:
    """Drop ``runs.server_id``."""
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("server_id")
