"""DELETE /api/chats/{id}: the chat and every row that names it go, in one transaction (on
SQLite and PostgreSQL); 409 while a run of it is queued or running; 404 unknown; its
WebSocket followers get an ``error`` and the close 4404."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson
from server_helpers import Server, new_chat, poll, wait_run
from sqlalchemy import select
from sqlalchemy.ext.asyncio import create_async_engine

from cursor_agent_api.server.models import chats, metadata, runs

HELD = {"CURSOR_AGENT_SIM_FAULT": "silence"}
"""The agent says ``system/init``, then nothing until stopped: its run stays running."""


async def _naming(db_url: str, chat_id: str) -> dict[str, int]:
    """For each table with a foreign key to ``chats`` or ``runs``, the rows that name the
    chat or one of its runs (by id or by key); and ``chats``' and ``runs``' own."""
    engine = create_async_engine(db_url)
    try:
        async with engine.connect() as conn:
            chat = (await conn.execute(select(chats.c.id, chats.c.num).where(chats.c.id == chat_id))).all()
            run_rows = (await conn.execute(
                select(runs.c.id, runs.c.num).where(runs.c.chat_id == chat_id)
            )).all()
            values = {"id": {r.id for r in chat} | {chat_id}, "num": {r.num for r in chat}}
            run_values = {"id": {r.id for r in run_rows}, "num": {r.num for r in run_rows}}
            found = {"chats": len(chat), "runs": len(run_rows)}
            for table in metadata.sorted_tables:
                for fk in table.foreign_keys:
                    target = fk.column
                    named = (values if target.table is chats else run_values)[target.name]
                    if target.table not in (chats, runs) or not named:
                        continue
                    count = len((await conn.execute(
                        select(fk.parent).where(fk.parent.in_(sorted(named)))
                    )).all())
                    key = f"{table.name}.{fk.parent.name}"
                    found[key] = found.get(key, 0) + count
            return found
    finally:
        await engine.dispose()


def _rows_naming(db_url: str, chat_id: str) -> dict[str, int]:
    return asyncio.run(_naming(db_url, chat_id))


def test_a_deleted_chat_leaves_no_row_that_names_it(server: Server) -> None:
    with server.client() as c:
        gone, kept = new_chat(c, force=True), new_chat(c, force=True)
        for chat in (gone, kept):  # records, a tool call, texts, a folded turn; twice
            for prompt in ("run `echo hi`", "reply with exactly: done"):
                run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": prompt}).json()
                assert wait_run(c, run["id"])["status"] == "succeeded"
        before = _rows_naming(server.db_url, gone["id"])
        assert before["runs"] == 2 and before["events.chat_key"] > 0
        assert before["tool_calls.run_id"] > 0 and before["turn_texts.chat_id"] > 0, before
        kept_before = _rows_naming(server.db_url, kept["id"])

        r = c.delete(f"/api/chats/{gone['id']}")
        assert r.status_code == 204, r.text

        after = _rows_naming(server.db_url, gone["id"])
        assert set(after.values()) == {0}, after
        assert _rows_naming(server.db_url, kept["id"]) == kept_before  # the other chat untouched
        assert c.get(f"/api/chats/{gone['id']}").status_code == 404
        assert c.get(f"/api/chats/{gone['id']}/events").status_code == 404
        assert [ch["id"] for ch in c.get("/api/chats").json()["chats"]] == [kept["id"]]
        r = c.delete(f"/api/chats/{gone['id']}")
        assert r.status_code == 404 and "no chat" in r.json()["detail"]
        # the kept chat still takes prompts, and a new chat works as before
        run = c.post(f"/api/chats/{kept['id']}/runs", json={"prompt": "reply with exactly: again"}).json()
        assert wait_run(c, run["id"])["status"] == "succeeded"
        fresh = new_chat(c)
        run = c.post(f"/api/chats/{fresh['id']}/runs", json={"prompt": "reply with exactly: new"}).json()
        assert wait_run(c, run["id"])["status"] == "succeeded"


def test_a_chat_with_a_queued_or_running_run_is_not_deleted(make_server: Callable[..., Server]) -> None:
    server = make_server(sim_env=HELD)
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hello"}).json()
        poll(lambda: c.get(f"/api/runs/{run['id']}").json()["status"] == "running")
        before = _rows_naming(server.db_url, chat["id"])
        r = c.delete(f"/api/chats/{chat['id']}")
        assert r.status_code == 409, r.text
        assert "queued or running" in r.json()["detail"]
        after = _rows_naming(server.db_url, chat["id"])  # nothing deleted (the run may add records)
        assert after["chats"] == after["runs"] == 1 and all(after[k] >= n for k, n in before.items()), after
        assert c.post(f"/api/runs/{run['id']}/cancel").status_code == 200
        assert c.delete(f"/api/chats/{chat['id']}").status_code == 204
        assert c.get(f"/api/runs/{run['id']}").status_code == 404


async def _follow_then_delete(server: Server, chat_id: str) -> tuple[list[dict[str, Any]], int | None]:
    """A follower of the chat (live), then the chat deleted: what it got and its close code."""
    import httpx
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    url = f"{server.url.replace('http://', 'ws://')}/api/chats/{chat_id}/stream?after_seq=0"
    got: list[dict[str, Any]] = []
    async with connect(url, additional_headers={"Authorization": f"token {server.token}"}) as ws:
        while not got or got[-1]["op"] != "live":
            got.append(orjson.loads(await asyncio.wait_for(ws.recv(), 30)))
        async with httpx.AsyncClient(base_url=server.url,
                                     headers={"Authorization": f"token {server.token}"}) as c:
            assert (await c.delete(f"/api/chats/{chat_id}")).status_code == 204
        try:
            while True:
                got.append(orjson.loads(await asyncio.wait_for(ws.recv(), 30)))
        except ConnectionClosed:
            return got, ws.close_code


def test_a_follower_of_a_deleted_chat_is_told_and_closed(server: Server) -> None:
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "reply with exactly: hi"}).json()
        wait_run(c, run["id"])
    got, code = asyncio.run(_follow_then_delete(server, chat["id"]))
    assert code == 4404
    assert got[-1]["op"] == "error" and "was deleted" in got[-1]["detail"], got[-1]


def test_a_prompt_or_a_change_racing_the_delete_is_a_404(
    make_inproc: Callable[..., Any], monkeypatch: Any
) -> None:
    """The DELETE lands between a request's read of the chat and its write: the write finds
    no chat, and the answer is the 404 of an unknown chat (it was a 500)."""
    import threading

    import httpx

    srv = make_inproc()
    real_create = srv.runs.log.create_run
    entered, deleted = threading.Event(), threading.Event()

    async def held_create(*a: Any, **k: Any) -> Any:
        entered.set()  # the chat was read; the run is not stored yet
        while not deleted.is_set():
            await asyncio.sleep(0.01)
        return await real_create(*a, **k)

    monkeypatch.setattr(srv.runs.log, "create_run", held_create)
    with srv.client() as c:
        chat = new_chat(c)
        posted: dict[str, httpx.Response] = {}
        t = threading.Thread(target=lambda: posted.update(
            r=c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"})))
        t.start()
        assert entered.wait(60)
        assert c.delete(f"/api/chats/{chat['id']}").status_code == 204
        deleted.set()
        t.join()
        assert posted["r"].status_code == 404, posted["r"].text
        assert "no chat" in posted["r"].json()["detail"]

        stale = new_chat(c)
        assert c.delete(f"/api/chats/{stale['id']}").status_code == 204

        async def stale_read(chat_id: str) -> dict[str, Any]:
            return stale  # read before the delete

        monkeypatch.setattr(srv.store, "get_chat", stale_read)
        r = c.patch(f"/api/chats/{stale['id']}", json={"options": {"force": True}})
        assert r.status_code == 404, r.text
