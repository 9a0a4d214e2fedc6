"""``GET /api/chats/{id}/tool-calls`` and ``GET /api/runs/{id}/tool-calls`` come a page at
a time (review "scale", 2026-11-24: they answered every call of a chat in one body, 0.8 MB
for a 400-run chat, unbounded). Oldest first, in the order the calls started, from
``after_seq`` (``next_after_seq``, ``has_more``: as ``GET …/events`` pages), at most
``limit`` calls and about ``max_page_bytes``; calls that share a place are never split. A
small chat answers what it did, with ``has_more`` false."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
from inproc import InProcServer
from server_helpers import new_chat, wait_run
from sqlalchemy import insert, update

from cursor_agent_api.server.models import chats, tool_calls
from cursor_agent_api.server.store import Store

BUDGET = 60_000
BIG = 20_000  # the args of some calls: a page of BUDGET holds two or three of them
SHARED = 1010  # the place of two calls (one record that stored both)


async def _add_calls(db_url: str, chat_id: str, run_id: str) -> None:
    """30 more calls of the run, at places 1000… (two of them at SHARED), some big; the
    chat's ``last_seq`` moved past them, as the records that would have made them would
    (a cursor past it is refused: ``after_seq_beyond_last``)."""
    rows = []
    for k in range(30):
        place = 1000 + k if k != 11 else SHARED
        rows.append({
            "chat_id": chat_id, "run_id": run_id, "call_id": f"extra-{k}", "kind": "read",
            "name": "readToolCall", "status": "succeeded", "idx": 100 + k, "output": "",
            "args": {"path": f"f{k}", "pad": "x" * (BIG if k % 3 == 0 else 10)},
            "result": {"success": {"content": f"c{k}"}}, "started_seq": place,
            "completed_seq": place + 1,
        })
    store = Store(db_url)
    await store.start()
    try:
        async with store.transaction() as conn:
            await conn.execute(insert(tool_calls), rows)
            await conn.execute(update(chats).where(chats.c.id == chat_id).values(last_seq=1030))
    finally:
        await store.close()


def _walk(c: httpx.Client, path: str, limit: int) -> list[dict[str, Any]]:
    """Every page of ``path``, ``limit`` calls at most each, from the first call."""
    pages: list[dict[str, Any]] = []
    after = 0
    while True:
        r = c.get(path, params={"after_seq": after, "limit": limit})
        assert r.status_code == 200, r.text
        assert len(r.content) < BUDGET + 2 * BIG  # one call past the budget at most
        body = r.json()
        pages.append(body)
        assert body["tool_calls"], "a page has one call at least"
        after = body["next_after_seq"]
        if not body["has_more"]:
            return pages


def _place(call: dict[str, Any]) -> int:
    return int(call["started_seq"] or call["completed_seq"])


def test_tool_calls_come_in_pages_in_the_order_they_started(
    make_inproc: Callable[..., InProcServer], db_url: str
) -> None:
    server = make_inproc(max_page_bytes=BUDGET)
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "read notes.txt"}).json()
        assert wait_run(c, run["id"])["status"] == "succeeded"

        # a small chat: one page, as before, and has_more false
        for path in (f"/api/chats/{chat['id']}/tool-calls", f"/api/runs/{run['id']}/tool-calls"):
            small = c.get(path).json()
            assert set(small) == {"tool_calls", "has_more", "next_after_seq"}
            assert [t["kind"] for t in small["tool_calls"]] == ["read"] and not small["has_more"]
            assert small["next_after_seq"] == _place(small["tool_calls"][0])
            assert small["tool_calls"][0]["output"].startswith("hello")

        asyncio.run(_add_calls(db_url, chat["id"], run["id"]))
        everything = c.get(f"/api/chats/{chat['id']}/tool-calls", params={"limit": 5000}).json()
        assert everything["has_more"]  # past the budget: the page stopped early

        for path in (f"/api/chats/{chat['id']}/tool-calls", f"/api/runs/{run['id']}/tool-calls"):
            for limit in (4, 5000):
                pages = _walk(c, path, limit)
                calls = [t for p in pages for t in p["tool_calls"]]
                keys = [(_place(t), t["index"]) for t in calls]
                assert keys == sorted(keys) and len(keys) == 31  # each call once, in order
                assert [t["call_id"] for t in calls][1:] == [f"extra-{k}" for k in range(30)]
                assert all(len(p["tool_calls"]) <= limit for p in pages)
                assert len(pages) >= (8 if limit == 4 else 3), [len(p["tool_calls"]) for p in pages]
                shared = [n for n, p in enumerate(pages) for t in p["tool_calls"] if _place(t) == SHARED]
                assert len(shared) == 2 and shared[0] == shared[1]  # never split
                big = next(t for t in calls if t["call_id"] == "extra-0")
                assert big["args"]["pad"] == "x" * BIG

        # one place's calls are one page, even past the limit
        r = c.get(f"/api/chats/{chat['id']}/tool-calls", params={"after_seq": SHARED - 1, "limit": 1})
        assert [(_place(t), t["index"]) for t in r.json()["tool_calls"]] == [(SHARED, 110), (SHARED, 111)]
        assert r.json()["has_more"] and r.json()["next_after_seq"] == SHARED
        last = c.get(f"/api/runs/{run['id']}/tool-calls", params={"after_seq": 1029}).json()
        assert (last["tool_calls"], last["has_more"], last["next_after_seq"]) == ([], False, 1029)

        for params in ({"limit": 0}, {"limit": 5001}, {"after_seq": -1}):
            assert c.get(f"/api/chats/{chat['id']}/tool-calls", params=params).status_code == 422
            assert c.get(f"/api/runs/{run['id']}/tool-calls", params=params).status_code == 422
