"""The forms of a PostgreSQL URL that SQLAlchemy's asyncpg dialect reads reach every connection
read the same way (review 51). Since the store hands asyncpg the URL in libpq's form as its DSN
(``database_urls.libpq_url``), that form must keep SQLAlchemy's reading: the query's ``host=``,
``port=`` and ``database=`` win over the authority, and ``?host=A:p&host=B:q`` lists hosts tried
in turn. Each of these ran a turn when SQLAlchemy handed the parts to asyncpg, and failed to start
the server once the DSN was the rendered URL (asyncpg lets the authority win, and keeps the last of
a repeated key). And the URL's ``options=`` reach the job queue too (its connector set its own
``options``, which replaced the URL's: the tables made in the URL's schema, the queue looked in
``public``)."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

import asyncpg
import pytest
from cluster import SIM  # (puts tests/server on the path)
from inproc import InProcServer
from server_helpers import new_chat, wait_run
from sqlalchemy.engine import make_url

from cursor_agent_api.database_urls import libpq_url

assert SIM


def _variant(db_url: str, kind: str) -> str:
    u = make_url(db_url)
    creds = f"{u.username}:{u.password}"
    if kind == "a socket's folder in the query, a host in the authority":
        folder = os.environ.get("PGDATA_DIR", "/tmp/cursor-agent-api-pg")
        if not Path(folder, f".s.PGSQL.{u.port}").exists():
            pytest.skip(f"no PostgreSQL socket in {folder} (the cluster is not scripts/postgres.sh's)")
        return f"postgresql+asyncpg://{creds}@localhost:1/{u.database}?host={folder}&port={u.port}"
    if kind == "two hosts, the first answering":
        return f"postgresql+asyncpg://{creds}@/{u.database}?host={u.host}:{u.port}&host=127.0.0.1:1"
    if kind == "two hosts, the second answering":
        return (f"postgresql+asyncpg://{creds}@/{u.database}?host=127.0.0.1,{u.host}"
                f"&port=1,{u.port}")
    if kind == "the database in the query":
        return f"postgresql+asyncpg://{creds}@{u.host}:{u.port}/no_such_db?database={u.database}"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", [
    "a socket's folder in the query, a host in the authority", "two hosts, the first answering",
    "two hosts, the second answering", "the database in the query"])
def test_a_turn_runs_with_the_url_read_as_sqlalchemy_reads_it(db_url: str, tmp_path: Path,
                                                             kind: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    server = InProcServer(tmp_path, _variant(db_url, kind), root, uuid.uuid4().hex,
                          store_connect_timeout=5).start()
    try:
        with server.client() as c:
            chat = new_chat(c, workspace=str(root))
            r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "reply with exactly: hi"})
            assert r.status_code == 202, r.text
            assert wait_run(c, r.json()["id"], 60)["status"] == "succeeded"
    finally:
        server.stop()


def test_the_urls_options_reach_the_job_queue(db_url: str, tmp_path: Path) -> None:
    async def make_schema() -> None:
        conn = await asyncpg.connect(libpq_url(db_url))
        try:
            await conn.execute("CREATE SCHEMA caa")
        finally:
            await conn.close()

    asyncio.run(make_schema())
    url = f"{db_url}?options=-c%20search_path%3Dcaa"
    root = tmp_path / "root"
    root.mkdir()
    server = InProcServer(tmp_path, url, root, uuid.uuid4().hex, dispatch="queue").start()
    try:
        with server.client() as c:
            chat = new_chat(c, workspace=str(root))
            r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "reply with exactly: hi"})
            assert r.status_code == 202, r.text
    finally:
        server.stop()
