"""A ``serve`` without ``--dispatch queue`` on the database of a queue cluster (review of
2026-11-25, "a newcomer setting up distributed mode"): it warns at start that the queue's
workers do not get its runs (``--dispatch queue`` most likely forgotten); its waiting runs are
left alone by the queue servers' sweep (tests/distributed/test_plain_serve_runs.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from cursor_agent_api.server.store import Store

SERVE = [sys.executable, "-m", "cursor_agent_api.cli", "serve"]
TOKEN = "t" * 24


def _serve_start_lines(env: dict[str, str], url: str, tmp_path: Path) -> str:
    """Start serve on ``url`` until it announces itself, stop it: what it said on stderr."""
    log = tmp_path / "serve.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [*SERVE, "--port", "0", "--simulate"], stdout=subprocess.PIPE, stderr=err, text=True,
            env={**env, "CURSOR_AGENT_API_DATABASE_URL": url, "CURSOR_AGENT_API_TOKEN": TOKEN},
            cwd=env["TEST_WS"], start_new_session=True)
        try:
            assert proc.stdout is not None
            assert "server" in proc.stdout.readline(), log.read_text()  # announced
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(60)
            if proc.stdout is not None:
                proc.stdout.close()
    return log.read_text()


def _heartbeat(url: str) -> None:
    """The database migrated, and a queue worker's heartbeat in it (now)."""
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)

    async def main() -> None:
        store = Store(url)
        await store.start()
        await store.close()
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute("INSERT INTO procrastinate_workers DEFAULT VALUES")
        finally:
            await conn.close()

    asyncio.run(main())


def test_a_plain_serve_beside_live_queue_workers_warns(
        cli_env: dict[str, str], postgres_url: str, tmp_path: Path) -> None:
    _heartbeat(postgres_url)
    said = _serve_start_lines(cli_env, postgres_url, tmp_path)
    assert ("warning: 1 queue worker(s) take runs from this database, but this server runs its "
            "agents itself, on this machine (no --dispatch queue): start it with --dispatch queue "
            "to hand its runs to them (docs/distributed.md)") in said, said


def test_a_plain_serve_without_workers_says_nothing_of_them(
        cli_env: dict[str, str], postgres_url: str, tmp_path: Path) -> None:
    said = _serve_start_lines(cli_env, postgres_url, tmp_path)
    assert "queue worker" not in said, said


def test_live_workers_are_those_the_migrations_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """The warning counts the workers alive within the window the refusal to migrate counts
    them in (one constant, LIVE_WITHIN; it was a second 60.0 of its own)."""
    from cursor_agent_api.cli.serve import _queue_workers_warning
    from cursor_agent_api.server.store import engine

    asked: list[float] = []

    class Workers:
        is_sqlite = False

        async def worker_counts(self, within: float) -> dict[str, int]:
            asked.append(within)
            return {"alive": 2, "stalled": 0}

    monkeypatch.setattr(engine, "LIVE_WITHIN", 123.0)
    said = asyncio.run(_queue_workers_warning(Workers()))
    assert asked == [123.0] and said[0].startswith("2 queue worker(s) take runs")
