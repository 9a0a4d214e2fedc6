"""Alembic migrations of the server's database, shipped inside the package.

They run at start-up (:func:`cursor_agent_api.server.store.run_migrations`);
``env.py`` uses the connection the store hands it, so no ``alembic.ini`` is needed.
"""
