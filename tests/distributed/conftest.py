"""Fixtures of the distributed-mode tests (``cluster.py``): skipped without PostgreSQL."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from cluster import PG_ENV, SKIP_REASON, Cluster, fresh_cluster
from server_helpers import pg_database


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Two API servers and three workers (w1, w2, w3) on a fresh database, for a module."""
    with fresh_cluster(tmp_path_factory.mktemp("cluster")) as c:
        (c.root / "project" / "notes.txt").write_text("hello\n")
        c.server()  # applies the migrations; then the others start side by side
        with ThreadPoolExecutor(4) as pool:
            started = [pool.submit(c.server), *(pool.submit(c.worker, n) for n in ("w1", "w2", "w3"))]
            for future in started:
                future.result()
        yield c


@pytest.fixture(scope="module")
def one_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One API server on a fresh database; the tests start their workers."""
    with fresh_cluster(tmp_path_factory.mktemp("one-server")) as c:
        c.server()
        yield c


@pytest.fixture
def db_url(pg_marked: None) -> Iterator[str]:
    """A fresh PostgreSQL database of its own for a test, dropped afterwards."""
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(SKIP_REASON)
    url, drop = pg_database(base)
    yield url
    drop()
