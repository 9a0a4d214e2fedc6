"""Browser sessions that can be revoked (``auth_sessions``, see ``server/auth.py``).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``auth_sessions``: ``sha256(id)``, the token's fingerprint and two times."""
    op.create_table(
        "auth_sessions",
        sa.Column("id_hash", sa.String(64), primary_key=True),
        sa.Column("token_fp", sa.String(128), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.Column("last_used_ms", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    """Drop ``auth_sessions`` (every browser signs in again)."""
    op.drop_table("auth_sessions")
