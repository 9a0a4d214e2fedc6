"""The relay's ``changes`` (what each record changed in its run's turn, which the page
applies) are those of a replay, for a socket that subscribes mid-run after another left
(review of 2026-11-24, wave 10): records that came while nobody watched were never folded
by the relay, whose kept fold went stale — its live changes were wrong from then on.

Every step waits for what it needs rather than for a time: the API server runs in this
process (:class:`InProcServer`, ``--dispatch queue``; the worker is a process of its own),
so that the test sees when the first socket has left (the hub) and when the relay has taken
the records that came meanwhile (what it published); the second run waits at its command
(:meth:`Cluster.gate`) until the second socket is live."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
from cluster import fresh_cluster
from inproc import InProcServer
from server_helpers import all_events, new_chat, poll, wait_run


def _post(c: httpx.Client, chat_id: str, prompt: str) -> str:
    r = c.post(f"/api/chats/{chat_id}/runs", json={"prompt": prompt})
    assert r.status_code == 202, r.text
    return str(r.json()["id"])


async def _changes(
    url: str,
    run_id: str | None = None,
    on_live: Callable[[], Any] = lambda: None,
    until: Callable[[dict[str, Any]], bool] = lambda e: False,
) -> tuple[dict[int, Any], int]:
    """Every record's changes until run ``run_id`` ends (``None``: a run) or a record meets
    ``until``, and the last seq replayed before ``live`` (when ``on_live`` is called, in a
    thread)."""
    from websockets.asyncio.client import connect

    got: dict[int, Any] = {}
    live_at = -1
    async with connect(url, max_size=None) as ws:
        async for text in ws:
            m = orjson.loads(text)
            if m.get("op") == "live":
                live_at = max(got, default=0)
                await asyncio.to_thread(on_live)
            if m.get("op") == "event":
                got[m["seq"]] = m.get("changes")
                e = m["event"]
                if until(e) or (e["type"] == "run" and run_id in (None, e["run_id"])
                                 and e["subtype"] in ("succeeded", "failed", "cancelled", "interrupted")):
                    return got, live_at
    raise AssertionError("the socket closed")


def _answer(c: httpx.Client, run_id: str, request: dict[str, Any]) -> None:
    """Allow a permission; pick the first option of each question."""
    payload = request["payload"]
    body = ({"decision": "allow-once"} if request["subtype"] == "permission" else
            {"answers": [{"question_id": q["id"], "option_ids": [q["options"][0]["id"]]}
                         for q in payload["questions"]]})
    r = c.post(f"/api/runs/{run_id}/requests/{payload['request_id']}", json=body)
    assert r.status_code == 200, r.text


def _request(c: httpx.Client, chat_id: str, subtype: str) -> dict[str, Any] | None:
    """The chat's stored request of that subtype, if any."""
    found = [e for e in all_events(c, chat_id) if (e["type"], e["subtype"]) == ("request", subtype)]
    return found[0] if found else None


def test_a_socket_that_subscribes_after_another_left_gets_the_replays_changes(tmp_path: Path) -> None:
    """An ACP run that waits twice: for its permission to run a command (where the first
    socket leaves), then for the answer to its question (where the second subscribes). The
    records between (the command's, a thinking block) come while nobody watches."""
    with fresh_cluster(tmp_path) as cluster:
        server = InProcServer(tmp_path, cluster.db_url, cluster.root, cluster.marker, dispatch="queue")
        server.start()
        try:
            cluster.worker("r1")
            relay, hub = server.runs.relay, server.app.state.hub
            with server.client() as c:
                chat = new_chat(c, transport="acp")
                url = (f"{server.url.replace('http://', 'ws://')}/api/chats/{chat['id']}/stream"
                       f"?after_seq=0&token={server.token}")
                prompt = "Ask me which file to use, then run `echo relayed`, then summarize in two sentences."
                box: dict[str, str] = {}
                # A first socket watches the run live (the relay keeps its fold of the chat)
                # until it asks to run its command; then it leaves.
                first, _ = asyncio.run(asyncio.wait_for(_changes(
                    url, on_live=lambda: box.update(run=_post(c, chat["id"], prompt)),
                    until=lambda e: e["type"] == "request" and e["subtype"] == "permission"), 90))
                run_id = box["run"]
                assert any(first.values()), "the relay folded records for the first socket"
                poll(lambda: hub.subscriber_count(chat["id"]) == 0, 60)
                # Records come while nobody watches, until the run asks its question: the
                # relay only moves past them.
                _answer(c, run_id, poll(lambda: _request(c, chat["id"], "permission")))
                question = poll(lambda: _request(c, chat["id"], "question"))
                poll(lambda: relay.published.get(chat["id"], 0) >= question["seq"], 60)
                assert hub.subscriber_count(chat["id"]) == 0, "nobody watched them"
                # A socket subscribes mid-run; once it is live, the question is answered.
                live, live_at = asyncio.run(asyncio.wait_for(
                    _changes(url, run_id, lambda: _answer(c, run_id, question)), 90))
                assert wait_run(c, run_id)["status"] == "succeeded"
                replay, _ = asyncio.run(asyncio.wait_for(_changes(url, run_id), 90))
        finally:
            server.stop()
    assert live_at >= question["seq"] > max(first) + 1, "records came unwatched, and were replayed"
    seen_live = sorted(q for q in live if q > live_at)
    assert seen_live, "the socket saw records live"
    assert any(live[q] for q in seen_live), "some of them with changes"
    wrong = [(q, live[q], replay.get(q)) for q in seen_live if live[q] != replay.get(q)]
    assert not wrong, wrong[:3]
