"""``GET /api/chats/{id}/runs`` and ``…/turns`` come a page at a time, newest first, each
page bounded by a count (``limit``) and about ``max_page_bytes``: a long chat's whole
history (once tens of MB in one answer, the server's memory up by hundreds of MB per
request) is read back page by page, every run once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from inproc import InProcServer
from server_helpers import new_chat, wait_run

BUDGET = 60_000
PROMPT = 5_000  # a run (prompt, result, turn) is a few times this big: a page holds a few


def _chat_with_runs(c: httpx.Client, n: int) -> tuple[dict[str, Any], list[str]]:
    chat = new_chat(c)
    ids = []
    for i in range(n):
        r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": f"say hello {i} " + "x" * PROMPT})
        assert r.status_code == 202, r.text
        ids.append(r.json()["id"])
        wait_run(c, ids[-1])
    return chat, ids


def _walk(c: httpx.Client, path: str, **params: Any) -> tuple[list[str], list[dict[str, Any]]]:
    """Every page of ``path`` back to the first run: the run ids (oldest first) and pages."""
    pages: list[dict[str, Any]] = []
    ids: list[str] = []
    before: str | None = None
    while True:
        r = c.get(path, params={**params, **({"before_run": before} if before else {})})
        assert r.status_code == 200, r.text
        assert len(r.content) < BUDGET + 2 * PROMPT  # one run past the budget at most
        body = r.json()
        pages.append(body)
        page = [(x.get("run") or x)["id"] for x in body["runs"]]
        assert page, "a page has one run at least"
        ids = page + ids
        assert body["next_before_run"] == page[0]
        before = body["next_before_run"]
        if not body["has_more"]:
            return ids, pages


def test_runs_and_turns_come_in_pages_newest_first(make_inproc: Callable[..., InProcServer]) -> None:
    server = make_inproc(max_page_bytes=BUDGET)
    with server.client() as c:
        chat, ids = _chat_with_runs(c, 8)
        last_seq = c.get(f"/api/chats/{chat['id']}").json()["last_seq"]

        runs, pages = _walk(c, f"/api/chats/{chat['id']}/runs")
        assert runs == ids  # each run once, in order
        assert len(pages) >= 2, [len(p["runs"]) for p in pages]
        assert all(r["prompt"].endswith("x" * PROMPT) for p in pages for r in p["runs"])  # whole

        turns, pages = _walk(c, f"/api/chats/{chat['id']}/turns")
        assert turns == ids
        assert len(pages) >= 2, [len(p["runs"]) for p in pages]
        assert {p["last_seq"] for p in pages} == {last_seq}
        for page in pages:
            for turn in page["runs"]:
                assert turn["run"]["status"] == "succeeded"
                assert "text" in [i["type"] for i in turn["items"]]

        # limit: the newest runs; a small chat is one page, as before
        small = c.get(f"/api/chats/{chat['id']}/runs", params={"limit": 2}).json()
        assert [r["id"] for r in small["runs"]] == ids[-2:] and small["has_more"]
        turns2 = c.get(f"/api/chats/{chat['id']}/turns", params={"limit": 1}).json()
        assert [t["run"]["id"] for t in turns2["runs"]] == ids[-1:] and turns2["has_more"]
        first = c.get(f"/api/chats/{chat['id']}/runs", params={"before_run": ids[1]}).json()
        assert [r["id"] for r in first["runs"]] == ids[:1] and not first["has_more"]
        assert c.get(f"/api/chats/{chat['id']}").json()["latest_run"]["id"] == ids[-1]

        # a run of another chat, or none, is a 404; a limit out of range a 422
        other = new_chat(c)
        empty = c.get(f"/api/chats/{other['id']}/turns").json()
        assert (empty["runs"], empty["has_more"], empty["next_before_run"]) == ([], False, None)
        for path in ("runs", "turns"):
            r = c.get(f"/api/chats/{other['id']}/{path}", params={"before_run": ids[0]})
            assert r.status_code == 404 and "has no run" in r.json()["detail"]
            assert c.get(f"/api/chats/{chat['id']}/{path}", params={"limit": 0}).status_code == 422
            assert c.get(f"/api/chats/{chat['id']}/{path}", params={"limit": 1001}).status_code == 422
