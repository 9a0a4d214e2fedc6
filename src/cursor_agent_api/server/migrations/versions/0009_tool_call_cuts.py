"""A stored tool call's cuts in their own column: ``tool_calls.cuts`` (JSON, NULL before 0009).

The table keeps a call's args and result cut to ``max_field_bytes`` (its records keep them
whole); until now the list of what was cut (``{"field": <JSON pointer>, "bytes": <whole
size>}``) was written under a ``"_cut"`` key of the stored result, where an agent's result
with a key of that name collided with it. Since 0009 the server writes the list (empty when
nothing was cut) to ``cuts`` and leaves the agent's result as it came.

Rows written before (``cuts`` NULL) are not rewritten: they are read as the earlier version
wrote them (``webui.stored_cuts``: a ``"_cut"`` key of the result that is a list of
``{"field": "/…", "bytes": <int>}`` is the server's; any other ``"_cut"`` is the agent's).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add ``tool_calls.cuts`` (NULL in the rows there are)."""
    op.add_column("tool_calls", sa.Column("cuts", sa.JSON(), nullable=True))


def downgrade() -> None:
    """Drop ``tool_calls.cuts`` (the calls written since read as if nothing was cut).

    An ``ALTER TABLE … DROP COLUMN`` on SQLite too (3.35+), not a batch's copy of the table,
    which would lose the expression index ``ix_tool_calls_chat_order`` (0008)."""
    op.drop_column("tool_calls", "cuts")
