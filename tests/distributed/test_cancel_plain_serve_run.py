"""A cancel sent to a queue API server (``serve --dispatch queue``) of a run that a ``serve``
without ``--dispatch queue`` on the same database runs is refused at once, 409
``run_elsewhere`` naming that server: such a server takes no cancel from the queue. It used to
be a 202 after 15 s ("sent but not applied"), the run going on to its end (audit 7, F4)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from cluster import pg_execute  # (puts tests/server on the path)
from inproc import InProcServer
from server_helpers import new_chat

from cursor_agent_api.server.runs import run_record
from cursor_agent_api.server.store import Store

PLAIN = "other-host:4242:99"
"""The plain server's identity (``host:pid:start``), on another host: never known dead."""


def test_a_queue_server_refuses_the_cancel_of_a_plain_servers_run_at_once(
    db_url: str, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    server = InProcServer(tmp_path, db_url, root, uuid.uuid4().hex, dispatch="queue").start()
    try:
        with server.client() as c:
            chat = new_chat(c, workspace=str(root))

            async def plain_run() -> str:  # as a serve without --dispatch queue records it
                store = Store(db_url)
                await store.start()
                try:
                    run, _ = await store.create_run(chat["id"], "hi", lambda r: run_record("queued", r),
                                                    server_id=PLAIN)
                    return str(run["id"])
                finally:
                    await store.close()

            run_id = asyncio.run(plain_run())
            pg_execute(db_url, "UPDATE runs SET status = 'running' WHERE id = $1", run_id)
            r = c.post(f"/api/runs/{run_id}/cancel", timeout=60)
            assert r.status_code == 409, (r.status_code, r.text)
            body = r.json()
            assert body["code"] == "run_elsewhere", body
            assert PLAIN in body["detail"] and "without --dispatch queue" in body["detail"], body
            assert c.get(f"/api/runs/{run_id}").json()["status"] == "running"
    finally:
        server.stop()
