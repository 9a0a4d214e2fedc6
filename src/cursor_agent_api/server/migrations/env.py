"""Alembic environment: migrate on the connection the server passes in.

The server calls Alembic with ``config.attributes["connection"]`` set to a
synchronous connection (the async engine's ``run_sync``); this file never
opens a connection of its own. Imported outside Alembic, it does nothing.
"""

from __future__ import annotations

from typing import Any

from alembic import context
from sqlalchemy import text

from cursor_agent_api.server.models import metadata
from cursor_agent_api.server.store.engine import MIGRATION_LOCK  # (the store takes it too)


def run_migrations_online() -> None:
    """Run the pending migrations in one transaction on the given connection (on SQLite the
    caller has begun it: ``run_migrations``). Notes in ``config.attributes`` the revision
    the database was at (``"from"``) and each migration applied (``"applied"``)."""
    attributes = context.config.attributes
    connection = attributes.get("connection")
    if connection is None:
        raise RuntimeError("run these migrations through cursor_agent_api.server.store.run_migrations")
    applied = attributes.setdefault("applied", [])

    def note(ctx: Any, step: Any, heads: Any, run_args: Any) -> None:  # Alembic passes all four
        applied.append(step.up_revision_id)

    context.configure(
        connection=connection, target_metadata=metadata, render_as_batch=True, on_version_apply=note
    )
    with context.begin_transaction():
        if connection.dialect.name == "sqlite" and not connection.connection.driver_connection.in_transaction:
            # Alembic run by hand (not through run_migrations, which has begun it): pysqlite
            # runs DDL outside any transaction, so a failed step would leave the ones before
            # it done (a refused downgrade below 0006 after 0007's was applied). One
            # transaction, as run_migrations makes it.
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        if connection.dialect.name == "postgresql":
            # Processes starting at once on one database (API servers, workers) migrate it
            # one after the other: the others then find it up to date. Released at commit.
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        attributes["from"] = context.get_context().get_current_revision()
        context.run_migrations()


if hasattr(context, "config"):  # loaded by Alembic, not imported
    run_migrations_online()
