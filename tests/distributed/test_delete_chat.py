"""DELETE /api/chats/{id} with ``serve --dispatch queue``: 409 while a worker runs the chat's
run; once it is over, the chat, its rows and its runs' jobs go; a follower of the chat on the
*other* API server is told and closed (4404: the delete's notification)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from cluster import Cluster, fresh_cluster, pg_execute
from server_helpers import Server, new_chat, poll, wait_run


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Two API servers and one worker on a fresh database."""
    with fresh_cluster(tmp_path_factory.mktemp("delete")) as c:
        c.server()
        c.server()
        c.worker("w1")
        yield c


def _post(client: Any, chat_id: str, prompt: str) -> dict[str, Any]:
    r = client.post(f"/api/chats/{chat_id}/runs", json={"prompt": prompt})
    assert r.status_code == 202, r.text
    return dict(r.json())


def _rows(c: Cluster, chat_id: str) -> dict[str, int]:
    counts = {}
    for name, sql in {
        "chats": "SELECT count(*) FROM chats WHERE id = $1",
        "runs": "SELECT count(*) FROM runs WHERE chat_id = $1",
        "events": "SELECT count(*) FROM events e JOIN chats c ON c.num = e.chat_key WHERE c.id = $1",
        "events_by_run": "SELECT count(*) FROM events e JOIN runs r ON r.num = e.run_key "
                         "WHERE r.chat_id = $1",
        "tool_calls": "SELECT count(*) FROM tool_calls WHERE chat_id = $1",
        "turn_texts": "SELECT count(*) FROM turn_texts WHERE chat_id = $1",
        "jobs": "SELECT count(*) FROM procrastinate_jobs WHERE lock = $1",
    }.items():
        counts[name] = pg_execute(c.db_url, sql, chat_id)[0][0]
    return counts


async def _follow_until_closed(server: Server, chat_id: str, live: asyncio.Event) -> tuple[Any, int | None]:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    url = f"{server.url.replace('http://', 'ws://')}/api/chats/{chat_id}/stream?after_seq=0"
    last: Any = None
    async with connect(url, additional_headers={"Authorization": f"token {server.token}"}) as ws:
        try:
            while True:
                last = orjson.loads(await asyncio.wait_for(ws.recv(), 60))
                if last["op"] == "live":
                    live.set()
        except ConnectionClosed:
            return last, ws.close_code


def test_delete_waits_for_the_workers_run_and_closes_followers_on_every_server(two_servers: Cluster) -> None:
    c = two_servers
    a, b = c.servers
    with a.client() as ca:
        chat = new_chat(ca, force=True)
        run = _post(ca, chat["id"], "run `sleep 60`")
        poll(lambda: ca.get(f"/api/runs/{run['id']}").json()["status"] == "running", 60)
        r = ca.delete(f"/api/chats/{chat['id']}")
        assert r.status_code == 409, r.text
        assert _rows(c, chat["id"])["chats"] == 1
        assert ca.post(f"/api/runs/{run['id']}/cancel").status_code == 200
        assert wait_run(ca, run["id"])["status"] == "cancelled"
        done = _post(ca, chat["id"], "reply with exactly: done")
        assert wait_run(ca, done["id"])["status"] == "succeeded"
        poll(lambda: pg_execute(c.db_url, "SELECT count(*) FROM procrastinate_jobs "
                                "WHERE lock = $1 AND status IN ('todo', 'doing')", chat["id"])[0][0] == 0)
        before = _rows(c, chat["id"])
        assert before["runs"] == 2 and before["events"] and before["jobs"], before  # the cancelled job stays

        async def follow_on_b_delete_on_a() -> tuple[Any, int | None]:
            live = asyncio.Event()
            follower = asyncio.create_task(_follow_until_closed(b, chat["id"], live))
            await asyncio.wait_for(live.wait(), 60)
            r = await asyncio.to_thread(ca.delete, f"/api/chats/{chat['id']}")
            assert r.status_code == 204, r.text
            return await follower

        last, code = asyncio.run(follow_on_b_delete_on_a())
        assert code == 4404, (last, c.logs())
        assert last["op"] == "error" and "was deleted" in last["detail"]
        assert set(_rows(c, chat["id"]).values()) == {0}
        with b.client() as cb:
            assert cb.get(f"/api/chats/{chat['id']}").status_code == 404
