"""A worker whose database misbehaves says so one line at a time, and names the cause
(found by a review with a database that stopped answering): Procrastinate's "Database
error." hid a ``PoolTimeout``; its "poll_jobs_to_abort error" came with two tracebacks every
abort poll; a job's task that failed as the worker stopped was "Task exception was never
retrieved" and its traceback."""

from __future__ import annotations

import asyncio
import gc
import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from procrastinate.exceptions import ConnectorException
from psycopg_pool import PoolTimeout

from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.store import describe_error
from cursor_agent_api.server.worker import WorkerSettings, serve_worker


def _connector_error() -> ConnectorException:
    """Procrastinate's error as its connector raises it: from the driver's."""
    try:
        try:
            raise PoolTimeout("couldn't get a connection after 30.00 sec")
        except PoolTimeout as cause:
            raise ConnectorException() from cause
    except ConnectorException as e:
        return e


def test_procrastinates_database_error_is_said_by_its_cause() -> None:
    # it was "Database error. (ConnectorException)"
    assert describe_error(_connector_error()) == "couldn't get a connection after 30.00 sec (PoolTimeout)"


class _Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def kept() -> Iterator[_Keep]:
    """Every record of the root logger's tree while the test runs."""
    keep, root = _Keep(), logging.getLogger()
    root.addHandler(keep)
    try:
        yield keep
    finally:
        root.removeHandler(keep)


def test_the_queues_failures_are_one_line_each(tmp_path: Path, kept: _Keep) -> None:
    """A worker (here one that could not open its database: what it set up stays) logs
    Procrastinate's failures, and a failed task nobody awaited, in one line each."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql+asyncpg://someone:hunter2@127.0.0.1:{port}/app"
    settings = WorkerSettings(server=ServerSettings(database_url=url, roots=(tmp_path,)), name="w-logs")

    async def lost(error: BaseException) -> None:
        raise error

    async def main() -> None:
        with pytest.raises(OSError):
            await serve_worker(settings)
        error = _connector_error()
        # as Procrastinate's worker logs its abort poll's failure (its logger, the worker's child)
        for name in ("procrastinate.worker", "procrastinate.worker.w-logs"):
            logging.getLogger(name).exception("poll_jobs_to_abort error", exc_info=error)
        task = asyncio.get_running_loop().create_task(lost(error), name="process job x[1]")
        await asyncio.wait([task])  # done, its exception never retrieved
        del task
        gc.collect()

    asyncio.run(main())
    said = [(r.name, r.levelname, r.getMessage(), r.exc_info) for r in kept.records
            if r.name.startswith(("procrastinate", "asyncio", "cursor_agent_api.worker"))]
    cause = "couldn't get a connection after 30.00 sec (PoolTimeout)"
    assert said == [
        ("procrastinate.worker", "ERROR", f"poll_jobs_to_abort error: {cause}", None),
        ("procrastinate.worker.w-logs", "ERROR", f"poll_jobs_to_abort error: {cause}", None),
        ("cursor_agent_api.worker", "WARNING", f"process job x[1] failed: {cause}", None),
    ], said
