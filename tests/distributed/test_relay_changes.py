"""The relay's ``changes`` (what each record changed in its run's turn, which the page
applies) are those of a replay, for a socket that subscribes mid-run after another left
(review of 2026-11-24, wave 10): records that came while nobody watched were never folded
by the relay, whose kept fold went stale — its live changes were wrong from then on."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
from cluster import Cluster
from server_helpers import all_events, new_chat, poll, wait_run

PROMPT = "Explain what you will do in two sentences, then run `sleep 4`, then summarize in two sentences."


async def _first_changes(url: str) -> int:
    """Watch until the first agent record with changes; leave. Its seq."""
    from websockets.asyncio.client import connect

    async with connect(url, max_size=None) as ws:
        async for text in ws:
            m = orjson.loads(text)
            if m.get("op") == "event" and m["event"]["source"] == "agent" and m.get("changes"):
                return int(m["seq"])
    raise AssertionError("the socket closed")


async def _changes(url: str) -> tuple[dict[int, Any], int]:
    """Every record's changes until the run ends, and the last seq replayed before ``live``."""
    from websockets.asyncio.client import connect

    got: dict[int, Any] = {}
    live_at = -1
    async with connect(url, max_size=None) as ws:
        async for text in ws:
            m = orjson.loads(text)
            if m.get("op") == "live":
                live_at = max(got, default=0)
            if m.get("op") == "event":
                got[m["seq"]] = m.get("changes")
                e = m["event"]
                if e["type"] == "run" and e["subtype"] in ("succeeded", "failed", "cancelled", "interrupted"):
                    return got, live_at
    raise AssertionError("the socket closed")


def test_a_socket_that_subscribes_after_another_left_gets_the_replays_changes(one_server: Cluster) -> None:
    (server,) = one_server.servers
    worker = one_server.worker("r1")
    with server.client() as c:
        chat = new_chat(c, force=True, stream_partial_output=True)
        url = server.ws_url(chat["id"])
        r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": PROMPT})
        assert r.status_code == 202, r.text
        run_id = r.json()["id"]
        asyncio.run(asyncio.wait_for(_first_changes(url), 60))
        # Records come while nobody watches (the relay only moves past them), then a socket
        # subscribes mid-run.
        poll(lambda: any(e["type"].startswith("tool-call") for e in all_events(c, chat["id"])), 60, 0.1)
        time.sleep(0.5)  # the relay takes the notifications of those records with no subscriber
        live, live_at = asyncio.run(asyncio.wait_for(_changes(url), 90))
        assert wait_run(c, run_id)["status"] == "succeeded"
        replay, _ = asyncio.run(asyncio.wait_for(_changes(url), 90))
    seen_live = sorted(q for q in live if q > live_at)
    assert seen_live, "the socket saw records live"
    assert any(live[q] for q in seen_live), "some of them with changes"
    wrong = [(q, live[q], replay.get(q)) for q in seen_live if live[q] != replay.get(q)]
    assert not wrong, wrong[:3]
    worker.stop()
