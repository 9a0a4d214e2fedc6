"""A worker's log when its database misbehaves: one line per failure, never a traceback.

Procrastinate's worker logs its own failures with their tracebacks (``poll_jobs_to_abort
error`` every abort poll while the database is away, a side task that failed, a job's
outcome): :func:`one_line_queue_errors` makes each of those records one line, its message
and the error (:func:`~..store.describe_error`: no SQL, no values; a
``ConnectorException`` said by its cause). A job's task that failed while the worker
stopped is left for the garbage collector, which asyncio reports as "Task exception was
never retrieved" with the traceback: :func:`lost_task_errors` says a database error there
in one line (any other error is reported as asyncio does).

Example:
    >>> one_line_queue_errors("w1")
    >>> any(isinstance(f, OneLinePoolErrors) for f in logging.getLogger("procrastinate.worker.w1").filters)
    True
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..store import describe_error, is_transient
from ..store.engine import OneLinePoolErrors
from ..store.errors import unwrap_error

logger = logging.getLogger("cursor_agent_api.worker")

QUEUE_LOGGERS = ("procrastinate.worker", "procrastinate.utils")
"""Procrastinate's loggers that log a failure with its traceback."""


def one_line_queue_errors(worker_name: str) -> None:
    """Put :class:`~..store.engine.OneLinePoolErrors` on Procrastinate's loggers (once),
    the worker ``worker_name``'s own included (``procrastinate.worker.<name>``: a logger's
    filters do not apply to its children's records)."""
    for name in (*QUEUE_LOGGERS, f"procrastinate.worker.{worker_name}"):
        target = logging.getLogger(name)
        if not any(isinstance(f, OneLinePoolErrors) for f in target.filters):
            target.addFilter(OneLinePoolErrors())


def is_database_error(error: BaseException) -> bool:
    """Whether ``error`` is the database's (a driver's, or Procrastinate's wrapper of one).

    Example:
        >>> is_database_error(ConnectionResetError(104, "Connection reset by peer"))
        True
        >>> is_database_error(KeyError("x"))
        False
    """
    cause = unwrap_error(error)
    return cause is not error or is_transient(cause) or type(cause).__module__.startswith(
        ("psycopg", "asyncpg", "sqlalchemy"))


def lost_task_errors(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The event loop's exception handler (see the module's text)."""
    error = context.get("exception")
    task = context.get("future")
    if error is not None and is_database_error(error):
        name = task.get_name() if isinstance(task, asyncio.Task) else "a task"
        logger.warning("%s failed: %s", name, describe_error(error))
        return
    loop.default_exception_handler(context)


__all__ = ["is_database_error", "lost_task_errors", "one_line_queue_errors"]
