"""``GET /api/chats`` pages by a key, not a place (review "contract", 2026-11-25, F5): with
``offset`` alone, a chat that became active between two pages moved to the front and
pushed the page's chats back (the next page repeated one), and a deleted chat pulled them
forward (the next page skipped one), and nothing said whether more were left. A page now
has ``has_more`` and ``next_before`` (the ``updated_ms:id`` of its last chat); ``before``
starts the next page after it. ``offset`` still works as it did."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from inproc import InProcServer
from server_helpers import new_chat
from sqlalchemy import update

from cursor_agent_api.server.models import chats
from cursor_agent_api.server.store import Store


async def _active_now(db_url: str, chat_id: str, updated_ms: int) -> None:
    """The chat as a run's records make it: active at ``updated_ms`` (past every other)."""
    store = Store(db_url)
    await store.start()
    try:
        async with store.transaction() as conn:
            await conn.execute(update(chats).where(chats.c.id == chat_id).values(updated_ms=updated_ms))
    finally:
        await store.close()


def _ids(page: dict[str, object]) -> list[str]:
    return [str(c["id"]) for c in page["chats"]]  # type: ignore[attr-defined, index]


def test_pages_of_chats_neither_skip_nor_repeat_while_chats_change(
    make_inproc: Callable[..., InProcServer], db_url: str
) -> None:
    server = make_inproc()
    with server.client() as c:
        for _ in range(6):
            new_chat(c)
        whole = c.get("/api/chats", params={"limit": 500}).json()
        order = _ids(whole)
        assert len(order) == 6 and whole["has_more"] is False
        newest = max(ch["updated_ms"] for ch in whole["chats"])

        first = c.get("/api/chats", params={"limit": 2}).json()
        assert _ids(first) == order[:2] and first["has_more"] is True
        # Between two pages: the last chat becomes active (to the front), the first is deleted.
        asyncio.run(_active_now(db_url, order[5], newest + 1000))
        assert c.delete(f"/api/chats/{order[0]}").status_code == 204
        second = c.get("/api/chats", params={"limit": 2, "before": first["next_before"]}).json()
        assert _ids(second) == order[2:4] and second["has_more"] is True
        third = c.get("/api/chats", params={"limit": 2, "before": second["next_before"]}).json()
        assert _ids(third) == [order[4]] and third["has_more"] is False
        # the chat that became active is at the front of a new first page
        assert _ids(c.get("/api/chats", params={"limit": 1}).json()) == [order[5]]
        # offset still pages (from the order as it is now: 5, 1, 2, 3, 4)
        by_offset = c.get("/api/chats", params={"limit": 2, "offset": 2}).json()
        assert _ids(by_offset) == [order[2], order[3]] and by_offset["has_more"] is True


def test_a_cursor_that_is_not_a_next_before_is_422(make_inproc: Callable[..., InProcServer]) -> None:
    server = make_inproc()
    with server.client() as c:
        for bad in ("x", "12", ":abc", "1:a;b", f"{2**63}:abc", f"-{2**63 + 1}:abc", "--1:abc",
                    "1:" + "a" * 37):
            r = c.get("/api/chats", params={"before": bad})
            assert r.status_code == 422, (bad, r.text)
            assert "before" in r.text
        empty = c.get("/api/chats").json()
        assert empty == {"chats": [], "has_more": False, "next_before": None}




def test_a_chat_updated_before_1970_pages_on(make_inproc: Callable[..., InProcServer],
                                             db_url: str) -> None:
    """A clock before 1970 writes a negative ``updated_ms``: the ``next_before`` the server hands
    out for it is taken back (its pattern refused the minus sign: 422)."""
    server = make_inproc()
    with server.client() as c:
        ids = [new_chat(c)["id"] for _ in range(3)]
        asyncio.run(_active_now(db_url, ids[1], -5000))
        asyncio.run(_active_now(db_url, ids[2], -(2**63)))  # the column's least
        seen, before = [], None
        while True:
            params: dict[str, object] = {"limit": 1} if before is None else {"limit": 1, "before": before}
            r = c.get("/api/chats", params=params)
            assert r.status_code == 200, (before, r.text)
            seen += _ids(r.json())
            before = r.json()["next_before"]
            if not r.json()["has_more"]:
                break
        assert seen == [ids[0], ids[1], ids[2]]
