"""Fixtures for the server tests (see ``server_helpers.py``).

The database is an SQLite file by default, or a fresh PostgreSQL database per
test when ``CURSOR_AGENT_API_TEST_DATABASE_URL`` is set.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the tests import server_helpers

from inproc import InProcServer
from server_helpers import PG_ENV, Server, marked_processes, pg_database, stop_servers


@pytest.fixture
def db_url(tmp_path: Path, pg_marked: None) -> Iterator[str]:
    """A fresh database: SQLite in tmp_path, or PostgreSQL when the env var is set."""
    base = os.environ.get(PG_ENV)
    if not base:
        yield f"sqlite+aiosqlite:///{tmp_path / 'server.sqlite3'}"
        return
    url, drop = pg_database(base)
    try:
        yield url
    finally:
        drop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The allowed root, with a project and a file in it."""
    root = tmp_path / "root"
    (root / "project").mkdir(parents=True)
    (root / "project" / "notes.txt").write_text("hello\nTODO: write tests\n")
    return root.resolve()


@pytest.fixture
def make_server(tmp_path: Path, db_url: str, workspace: Path) -> Iterator[Callable[..., Server]]:
    """Start servers (all stopped at the end); asserts no agent process outlives the test."""
    marker = uuid.uuid4().hex
    servers: list[Server] = []

    def make(database_url: str | None = None, **kwargs: Any) -> Server:
        server = Server(tmp_path, database_url or db_url, workspace, marker, **kwargs).start()
        servers.append(server)
        return server

    yield make
    stop_servers(servers, marker)


@pytest.fixture
def server(make_server: Callable[..., Server]) -> Server:
    """A server with the default simulator settings."""
    return make_server()


@pytest.fixture
def make_inproc(tmp_path: Path, db_url: str, workspace: Path) -> Iterator[Callable[..., InProcServer]]:
    """Start servers in this process (``inproc.py``), all stopped at the end."""
    marker = uuid.uuid4().hex
    servers: list[InProcServer] = []

    def make(**settings: Any) -> InProcServer:
        server = InProcServer(tmp_path, db_url, workspace, marker, **settings).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.store.faults.clear()
        server.stop()
    leftover = marked_processes(marker)
    assert not leftover, f"agent processes outlived the test: {leftover}"
