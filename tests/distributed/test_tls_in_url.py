"""The TLS mode can be asked for in the database URL, in either form: ``?ssl=require``
(SQLAlchemy's and asyncpg's) or ``?sslmode=require`` (libpq's). Each driver is given the form it
takes: :func:`~cursor_agent_api.database_urls.libpq_url`, for psycopg (the job queue's) and
asyncpg's DSN (the LISTEN connections' and, through
:func:`~cursor_agent_api.database_urls.engine_args`, the store's SQLAlchemy engine). Either form
used to stop a worker or ``serve --dispatch queue`` (psycopg refused ``ssl``, asyncpg's DSN took
it for a server setting; SQLAlchemy handed ``sslmode`` to asyncpg, a ``TypeError``: audit 7).
The test cluster has no TLS: a worker and an API server start and work with ``disable``, in both
forms."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import asyncpg
import pytest
from cluster import SIM  # (puts tests/server on the path)
from inproc import InProcServer
from server_helpers import new_chat, wait_run

from cursor_agent_api.database_urls import engine_args, libpq_url
from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.worker import Worker, WorkerSettings


@pytest.mark.parametrize("query", ["ssl=require", "sslmode=require"])
def test_each_driver_is_given_the_form_it_takes(query: str) -> None:
    url = f"postgresql+asyncpg://u:pw@db:5432/app?{query}"
    assert libpq_url(url) == "postgresql://u:pw@db:5432/app?sslmode=require"
    # the store's engine hands asyncpg the same libpq URL, which asyncpg reads as libpq does
    assert engine_args(url) == ("postgresql+asyncpg://",
                                {"dsn": "postgresql://u:pw@db:5432/app?sslmode=require"})


# the third: libpq's other parameters reach every connection (application_name=, sslpassword=:
# a TypeError traceback at serve's start before, the store's driver handed them as arguments)
# (SQLAlchemy's own prepared_statement_cache_size= stays SQLAlchemy's: a libpq parameter to none)
@pytest.mark.parametrize("query", ["ssl=disable", "sslmode=disable",
                                   "sslmode=disable&application_name=caa-tls&sslpassword=unused"
                                   "&prepared_statement_cache_size=0"])
def test_a_worker_and_an_api_server_work_with_the_tls_mode_in_the_url(
    db_url: str, tmp_path: Path, query: str
) -> None:
    url = f"{db_url}?{query}"
    root = tmp_path / "root"
    root.mkdir()
    server = InProcServer(tmp_path, url, root, uuid.uuid4().hex, dispatch="queue").start()
    try:
        settings = ServerSettings(database_url=url, roots=(root,), agent_binary=SIM,
                                  agent_env={"CURSOR_CONFIG_DIR": str(tmp_path / "cursor-config")})
        worker = Worker(WorkerSettings(server=settings, name="w-tls"))

        async def main() -> str:
            ready = asyncio.Event()
            worker.on_ready = ready.set
            task = asyncio.create_task(worker.run())
            waiting = asyncio.create_task(ready.wait())
            await asyncio.wait([task, waiting], timeout=60, return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
            assert not task.done(), task.exception()
            try:
                with server.client() as c:
                    chat = await asyncio.to_thread(new_chat, c, workspace=str(root))
                    r = await asyncio.to_thread(c.post, f"/api/chats/{chat['id']}/runs",
                                                json={"prompt": "reply with exactly: hi"})
                    assert r.status_code == 202, r.text
                    done = await asyncio.to_thread(wait_run, c, r.json()["id"], 60)
                if "application_name" in query:  # the store's pool, the job queue's (LISTEN: its own)
                    probe = await asyncpg.connect(libpq_url(db_url))
                    try:
                        named = await probe.fetchval(
                            "SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                            "'caa-tls' AND datname = current_database()")
                    finally:
                        await probe.close()
                    assert named >= 3, named
                return str(done["status"])
            finally:
                worker.stop()
                await asyncio.wait_for(task, 60)

        assert asyncio.run(main()) == "succeeded"
    finally:
        server.stop()
