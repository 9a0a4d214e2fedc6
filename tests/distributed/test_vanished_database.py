"""A worker whose PostgreSQL host goes away without a word while the worker migrates (its
migrations' connection waiting, here for the migrations' lock another process holds) notices
it and ends with the start's error for a database that did not answer (exit 1, no
traceback). It used to wait for ever: that connection has no statement timeout (a migration
takes what it takes), and a connection that only waits for an answer sends nothing, so
nothing ever told it the host was gone. Now every connection to PostgreSQL has TCP keepalive
(``server/store/engine.py``: ``KeepAlive``): the kernel's probe, after a few seconds of silence, meets
the reset of a host that forgot the connection.

The host "goes away" through :meth:`PgProxy.vanish`: the proxy closes its side of the
worker's connections silently (no FIN, no RST). What this cannot show: a host that drops
packets (no answer, not even a reset): there the probes go unanswered and the kernel gives
up after ``idle + interval * count`` seconds (``KeepAlive.within``); only the options set
on every connection are checked for that (``tests/server/test_keepalive.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from pg_proxy import can_vanish, proxied

from cursor_agent_api.server.dispatch.jobs import libpq_url
from cursor_agent_api.server.store.engine import MIGRATION_LOCK

EXITS_WITHIN = 90.0
"""A hang's limit only (the old code never ended; now about ``store_connect_timeout``)."""
WAITS_WITHIN = 60.0
"""A hang's limit only, for the worker's migrations to reach the lock."""


def _waiting_for_the_lock(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock' AND query LIKE '%pg_advisory_xact_lock%'").fetchone()
    return bool(row and row[0])


def _lock_held(db_url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    with psycopg.connect(libpq_url(db_url), autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        yield conn


def test_a_worker_whose_database_vanishes_while_it_migrates_stops_with_the_start_error(
    db_url: str, tmp_path: Path
) -> None:
    if not can_vanish():
        pytest.skip("needs TCP_REPAIR (Linux, CAP_NET_ADMIN) to close a connection silently")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURSOR_AGENT_API_")}
    log_path = tmp_path / "worker.log"
    with proxied(db_url) as (proxy, through):
        for locker in _lock_held(db_url):
            with log_path.open("wb") as log:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "cursor_agent_api.cli", "worker", "--simulate",
                     "--name", "w-vanished", "--root", str(tmp_path)],
                    stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL,
                    cwd=tmp_path, env={**env, "CURSOR_AGENT_API_DATABASE_URL": through},
                    start_new_session=True)
            try:
                deadline = time.monotonic() + WAITS_WITHIN
                while not _waiting_for_the_lock(locker):  # (a condition, polled)
                    assert proc.poll() is None, log_path.read_text(errors="replace")
                    assert time.monotonic() < deadline, log_path.read_text(errors="replace")
                    time.sleep(0.1)
                proxy.vanish()
                try:
                    code = proc.wait(EXITS_WITHIN)
                except subprocess.TimeoutExpired:
                    pytest.fail("the worker still waits for its migrations' answer "
                                f"{EXITS_WITHIN:g} s after its database vanished")
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(30)
    text = log_path.read_text(errors="replace")
    assert code == 1, text
    assert "Traceback" not in text, text
    last = text.splitlines()[-1]
    assert last.startswith("Error: cannot open the database"), text
    assert "start it again once the database answers" in last, text
