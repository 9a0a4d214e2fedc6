"""A PostgreSQL host that stops answering (packets dropped: connections stay open, nothing
comes back) holds nothing of the job queue for longer than the store's own waits
(``store_connect_timeout`` + ``store_statement_timeout``): Procrastinate's queries went
through a psycopg pool with no timeout of ours, so a cancel, a deferred run, the sweep and a
worker's fetch and heartbeat waited until TCP gave up (~15 min). Now a cancel is the API's
JSON 503, a run that cannot be queued is failed saying why, and a worker stops with its one
exit line (its supervisor starts it again; it works once the database answers).

The database is behind a :class:`PgProxy` (so that the cluster other tests use stays up):
:meth:`PgProxy.hold` is the host that stops answering; the waits are 1 s each. Each test
bounds its own wait (the old code hung there)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from cluster import SIM  # (puts tests/server on the path)
from inproc import InProcServer
from pg_proxy import PgProxy, proxied
from server_helpers import new_chat

from cursor_agent_api.server.dispatch import queue as queue_module
from cursor_agent_api.server.dispatch.worker_logs import one_line_queue_errors
from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.store import StoreUnavailableError, is_transient
from cursor_agent_api.server.worker import Worker, WorkerSettings

WAITS = {"store_connect_timeout": 1.0, "store_statement_timeout": 1.0}
ANSWER_WITHIN = 30.0
"""Seconds a request may take here: 1 + 1 s of waits and psycopg's cancel (up to 10 s)."""


def _assert_503(r: httpx.Response) -> None:
    assert r.status_code == 503, (r.status_code, r.text)
    assert r.headers["content-type"].startswith("application/json"), r.text
    assert "the database is unavailable" in r.json()["detail"], r.text


def test_a_cancel_and_a_run_are_answered_when_the_queues_database_stops_answering(
    db_url: str, tmp_path: Path, capfd: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job queue's database host stops answering (only the queue's connections go through
    the proxy, so that the store, which has its own waits, answers): a cancel is the JSON 503
    within the waits, a new run is failed ("could not be queued") rather than held; once the
    host answers again, the cancel works."""
    root = tmp_path / "root"
    root.mkdir()
    with proxied(db_url) as (proxy, through):
        real = queue_module.make_app
        monkeypatch.setattr(queue_module, "make_app", lambda _url, **kw: real(through, **kw))
        server = InProcServer(tmp_path, db_url, root, uuid.uuid4().hex, dispatch="queue", **WAITS).start()
        try:
            with server.client() as c:
                chat, other = new_chat(c, workspace=str(root)), new_chat(c, workspace=str(root))
                run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"}).json()
                assert run["status"] == "queued"  # no worker: it stays so
                capfd.readouterr()
                proxy.hold()
                _assert_503(c.post(f"/api/runs/{run['id']}/cancel", timeout=ANSWER_WITHIN))
                r = c.post(f"/api/chats/{other['id']}/runs", json={"prompt": "hi"}, timeout=ANSWER_WITHIN)
                assert r.status_code == 202, r.text
                failed = r.json()
                assert (failed["status"], failed["error_type"]) == ("failed", "QueueUnavailable"), failed
                assert "the run could not be queued: the database did not answer" in failed["error"]
                proxy.release()
                answers = []
                for _ in range(10):  # a connection cut as the host came back may fail once
                    answers.append(c.post(f"/api/runs/{run['id']}/cancel", timeout=ANSWER_WITHIN))
                    if answers[-1].status_code != 503:
                        break
                assert answers[-1].status_code == 200, answers[-1].text
                assert answers[-1].json()["status"] == "cancelled"
        finally:
            proxy.release()
            server.stop()
    logged = capfd.readouterr().err
    assert "Traceback" not in logged, logged[-3000:]


def test_a_worker_whose_database_stops_answering_stops_within_the_waits(
    db_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker's fetch and heartbeats get no answer: it stops (its runs would end
    ``interrupted``; here it has none) with the database's error, one line each in its log,
    instead of waiting for ever; started again once the database answers, it works."""
    root = tmp_path / "root"
    root.mkdir()

    def worker(url: str) -> Worker:
        settings = ServerSettings(database_url=url, roots=(root,), agent_binary=SIM, **WAITS,
                                  agent_env={"CURSOR_CONFIG_DIR": str(tmp_path / "cursor-config")})
        return Worker(WorkerSettings(server=settings, name="w1", heartbeat=0.2, abort_poll=0.2))

    async def started(w: Worker) -> asyncio.Task[None]:
        """``w`` running, once it takes jobs."""
        ready = asyncio.Event()
        w.on_ready = ready.set
        task = asyncio.create_task(w.run())
        waiting = asyncio.create_task(ready.wait())
        await asyncio.wait_for(asyncio.wait([task, waiting], return_when=asyncio.FIRST_COMPLETED), 60)
        waiting.cancel()
        assert not task.done(), task.exception()
        return task

    async def main(proxy: PgProxy, through: str) -> BaseException | None:
        held = worker(through)
        task = await started(held)
        proxy.hold()
        assert held._taking is not None
        try:  # the old code waited here until TCP gave up
            await asyncio.wait_for(asyncio.wait([held._taking]), 45)
        finally:
            proxy.release()
        with contextlib.suppress(Exception):  # (it raises what stopped it)
            await asyncio.wait_for(task, 60)
        error = held._taking.exception()
        again = worker(db_url)  # the database answers: started again, it works
        running = await started(again)
        again.stop()
        await asyncio.wait_for(running, 60)
        return error

    one_line_queue_errors("w1")  # as serve_worker does
    with proxied(db_url) as (proxy, through), caplog.at_level("WARNING"):
        error = asyncio.run(main(proxy, through))
    assert isinstance(error, StoreUnavailableError) and is_transient(error), repr(error)
    assert "the database did not answer the job queue within 2 s" in str(error)
    assert "Traceback" not in caplog.text, caplog.text
