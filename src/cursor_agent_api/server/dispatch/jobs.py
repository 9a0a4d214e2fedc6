"""The job queue's names and the Procrastinate app, shared by API servers and workers.

A run travels as one job of task :data:`TASK_NAME` with one argument, ``run_id``:
everything else (prompt, chat, workspace) is in the database, and events never go
through the queue. Each job has ``lock=<chat id>``: Procrastinate runs one job per
chat at a time, in order. A chat's first run goes to the shared queue (``runs`` by
default); its follow-ups go to the affinity queue of the worker that holds its Cursor
chat (:func:`worker_queue`), while that worker lives.

Example:
    >>> worker_queue("build-1")
    'worker.build-1'
"""

from __future__ import annotations

from typing import Any

from ...database_urls import libpq_url

TASK_NAME = "cursor_agent_api.run"
"""The one task: run the stored run ``run_id``."""

DEFAULT_QUEUE = "runs"
"""The shared queue every worker listens to (``serve --queue`` / ``worker --queue``)."""

AFFINITY_PREFIX = "worker."


def worker_queue(name: str) -> str:
    """The affinity queue of the worker called ``name`` (only that worker listens to it)."""
    return AFFINITY_PREFIX + name


def make_app(database_url: str, *, max_size: int = 4, connect_timeout: float = 10.0,
             statement_timeout: float = 60.0) -> Any:
    """A Procrastinate app on the server's database (open it with ``open_async``), whose
    queries wait as the store's do (``store_connect_timeout``, ``store_statement_timeout``:
    :class:`~.bounded.BoundedConnector`).

    Example:
        >>> type(make_app("postgresql+asyncpg://u@127.0.0.1/db")).__name__
        'App'
    """
    import procrastinate

    from .bounded import BoundedConnector

    connector = BoundedConnector(libpq_url(database_url), max_size=max_size,
                                 connect_timeout=connect_timeout, statement_timeout=statement_timeout)
    return procrastinate.App(connector=connector)
