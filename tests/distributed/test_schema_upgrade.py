"""A newer version does not migrate the shared schema under running processes of the older
one (review of 2026-11-25, "two versions running at once": an older worker then retried its
writes for ever, its run stayed ``running``, its chat refused prompts). While a worker sends
heartbeats or an API server listens on the database, a start that would migrate it is
refused (nothing changed, one line saying what to do); once they are stopped it migrates.
On PostgreSQL."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cluster import pg_execute
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from cursor_agent_api.server.store import MIGRATIONS_DIR, Store
from cursor_agent_api.server.store.errors import SchemaInUseError

HEAD = sorted(p.stem for p in (MIGRATIONS_DIR / "versions").glob("[0-9]*.py"))[-1].split("_")[0]
OLDER = f"{int(HEAD) - 1:04d}"


def _at_older(db_url: str) -> None:
    """The database as the version before the last migration left it (procrastinate's
    tables included)."""
    from alembic import command
    from alembic.config import Config

    async def main() -> None:
        store = Store(db_url)
        await store.start()
        await store.close()
        engine = create_async_engine(db_url)

        def down(sync_conn: Any) -> None:
            cfg = Config()
            cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
            cfg.attributes["connection"] = sync_conn
            command.downgrade(cfg, OLDER)

        try:
            async with engine.begin() as conn:
                await conn.run_sync(down)
        finally:
            await engine.dispose()

    asyncio.run(main())


def _start(db_url: str) -> None:
    async def main() -> None:
        store = Store(db_url)
        try:
            await store.start()
        finally:
            await store.close()

    asyncio.run(main())


def _revision(db_url: str) -> str:
    return str(pg_execute(db_url, "SELECT version_num FROM alembic_version")[0][0])


def test_a_live_worker_keeps_the_schema_from_being_upgraded(db_url: str) -> None:
    _at_older(db_url)
    assert _revision(db_url) == OLDER
    pg_execute(db_url, "INSERT INTO procrastinate_workers DEFAULT VALUES")  # a heartbeat, now
    with pytest.raises(SchemaInUseError) as refused:
        _start(db_url)
    assert str(refused.value) == (
        f"the schema is at {OLDER}, this version's at {HEAD}, and 1 worker(s) of the older "
        "version use it: stop them first (docs/distributed.md: Upgrading a cluster)")
    assert _revision(db_url) == OLDER  # nothing changed
    # the worker stopped (its last heartbeat long ago): the start migrates
    pg_execute(db_url, "UPDATE procrastinate_workers SET last_heartbeat = now() - interval '5 minutes'")
    _start(db_url)
    assert _revision(db_url) == HEAD


def test_a_listening_api_server_keeps_the_schema_from_being_upgraded(db_url: str) -> None:
    import asyncpg

    _at_older(db_url)
    dsn = make_url(db_url).set(drivername="postgresql").render_as_string(hide_password=False)

    async def with_a_server_listening() -> None:
        conn = await asyncpg.connect(dsn, server_settings={"application_name": "cursor-agent-api-listen"})
        try:
            with pytest.raises(SchemaInUseError, match="1 API server connection"):
                store = Store(db_url)
                try:
                    await store.start()
                finally:
                    await store.close()
        finally:
            await conn.close()

    asyncio.run(with_a_server_listening())
    assert _revision(db_url) == OLDER
    _start(db_url)
    assert _revision(db_url) == HEAD


def test_an_up_to_date_schema_starts_beside_live_processes(db_url: str) -> None:
    _start(db_url)
    pg_execute(db_url, "INSERT INTO procrastinate_workers DEFAULT VALUES")
    _start(db_url)  # nothing to migrate: no check
    assert _revision(db_url) == HEAD


def test_serve_on_a_schema_in_use_says_so_in_one_line(db_url: str, tmp_path: Path) -> None:
    """``serve`` refused the same way says it in the one line docs/distributed.md shows, exit 1
    (review 36: with the store opened as the start's first step, it was a traceback)."""
    _at_older(db_url)
    pg_execute(db_url, "INSERT INTO procrastinate_workers DEFAULT VALUES")  # a live worker
    env = {**os.environ, "HOME": str(tmp_path), "CURSOR_AGENT_API_DATABASE_URL": db_url}
    done = subprocess.run([sys.executable, "-m", "cursor_agent_api.cli", "serve", "--simulate",
                           "--port", "0"], env=env, capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, check=False)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("Error: cannot open the database postgresql+asyncpg://"), line
    assert line.endswith("stop them first (docs/distributed.md: Upgrading a cluster) "
                         "(SchemaInUseError)"), line
    assert _revision(db_url) == OLDER
