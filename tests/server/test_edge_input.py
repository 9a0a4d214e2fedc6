"""Issue 11, point 7: odd numbers and model names get a 4xx (never a 500), with the security headers."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from server_helpers import Server, new_chat, wait_run
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

BIG = str(2**63)


def _ws_refusal(url: str) -> tuple[list[dict[str, Any]], int | None]:
    async def go() -> tuple[list[dict[str, Any]], int | None]:
        msgs: list[dict[str, Any]] = []
        async with connect(url) as ws:
            try:
                while True:
                    msgs.append(orjson.loads(await ws.recv()))
            except ConnectionClosed:
                pass
            return msgs, ws.close_code

    return asyncio.run(go())


def test_after_seq_that_is_not_a_plain_63_bit_number_is_4400(server: Server) -> None:
    with server.client() as c:
        chat = new_chat(c)
    base = server.ws_url(chat["id"])
    for raw in ("%C2%B2", "9" * 5000, BIG, "%EF%BC%91", "1_0", "+1", "0x1"):
        msgs, code = _ws_refusal(base.replace("after_seq=0", f"after_seq={raw}"))
        assert code == 4400, (raw[:20], code, msgs)
        assert msgs[0]["op"] == "error" and "after_seq" in msgs[0]["detail"]
    # The largest stored seq is still accepted as a number (then refused as beyond the chat).
    msgs, code = _ws_refusal(base.replace("after_seq=0", f"after_seq={2**63 - 1}"))
    assert code == 4400 and "beyond the chat's last seq 0" in msgs[0]["detail"]


def test_rest_after_seq_and_offset_past_64_bits_are_422(server: Server) -> None:
    with server.client() as c:
        chat = new_chat(c)
        for path, params in (
            (f"/api/chats/{chat['id']}/events", {"after_seq": BIG}),
            (f"/api/chats/{chat['id']}/events", {"after_seq": "9" * 5000}),
            (f"/api/chats/{chat['id']}/events", {"after_seq": "²"}),
            ("/api/chats", {"offset": BIG}),
            ("/api/chats", {"offset": "9" * 5000}),
        ):
            r = c.get(path, params=params)
            assert r.status_code == 422, (path, r.status_code, r.text[:200])
            assert r.headers["x-frame-options"] == "DENY"
            assert r.headers["x-content-type-options"] == "nosniff"
            assert "content-security-policy" in r.headers
            assert len(r.content) < 4096
        # The largest is a number, refused as beyond the chat (as the WebSocket's 4400).
        top = c.get(f"/api/chats/{chat['id']}/events", params={"after_seq": 2**63 - 1})
        assert top.status_code == 400 and "beyond the chat's last seq 0" in top.json()["detail"]
        assert c.get("/api/chats", params={"offset": 2**63 - 1}).json()["chats"] == []


def test_a_tool_call_index_past_its_32_bit_column_is_422(server: Server) -> None:
    """The tool-call index is a 32-bit column (PostgreSQL's integer): one past it is refused
    as invalid (422), never a database error (500); the largest is a plain 404."""
    with server.client() as c:
        past = c.get(f"/api/runs/no-run/tool-calls/{2**31}/output")
        assert past.status_code == 422, past.text
        top = c.get(f"/api/runs/no-run/tool-calls/{2**31 - 1}/output")
        assert top.status_code == 404, top.text


def test_model_must_look_like_a_model_id(server: Server) -> None:
    with server.client() as c:
        for model in ("gpt 5", "gpt-5 ", " gpt-5", "--force", "-m", "gpt\t5", "gpt-5\n", "a;b", ""):
            r = c.post("/api/chats", json={"workspace": "project", "model": model})
            assert r.status_code == 422, (model, r.status_code)
            assert "model" in r.json()["detail"]
        assert c.get("/api/chats").json()["chats"] == [], "nothing created"
        for model in ("gpt-5", "claude-4.5-sonnet", "sonnet-4.5-thinking", "openai/gpt-5:latest"):
            r = c.post("/api/chats", json={"workspace": "project", "model": model})
            assert r.status_code == 201, (model, r.text)
            assert r.json()["model"] == model


def test_rest_events_refuse_a_seq_past_the_chats_as_the_websocket_does(server: Server) -> None:
    """A cursor past the chat's last seq (a client's state from before a power loss, or from
    another database) was a silent 200 echoing it back, while the WebSocket refused it: a
    poller missed the records that took those seqs again, untold. Now a 400 that names the
    last seq and says to start again from 0; the last seq itself is an empty page."""
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"}).json()
        wait_run(c, run["id"])
        last = c.get(f"/api/chats/{chat['id']}").json()["last_seq"]
        at = c.get(f"/api/chats/{chat['id']}/events", params={"after_seq": last})
        assert at.status_code == 200 and at.json()["events"] == [] and at.json()["next_after_seq"] == last
        past = c.get(f"/api/chats/{chat['id']}/events", params={"after_seq": last + 1})
        assert past.status_code == 400, past.text
        detail = past.json()["detail"]
        assert f"beyond the chat's last seq {last}" in detail and "after_seq=0" in detail
        assert past.json()["code"] == "after_seq_beyond_last" and past.json()["last_seq"] == last


def test_rest_tool_calls_refuse_a_seq_past_the_chats_as_events_do(server: Server) -> None:
    """The tool-call pages take the same cursor (a record's seq) as the events: one past the
    chat's last seq was a silent empty page, so a poller from before a power loss missed the
    calls whose records took those seqs again. Both routes (the chat's, the run's) now answer
    the events' 400; the last seq itself is an empty page."""
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"}).json()
        wait_run(c, run["id"])
        last = c.get(f"/api/chats/{chat['id']}").json()["last_seq"]
        for path in (f"/api/chats/{chat['id']}/tool-calls", f"/api/runs/{run['id']}/tool-calls"):
            at = c.get(path, params={"after_seq": last})
            assert at.status_code == 200 and at.json()["tool_calls"] == [], (path, at.text)
            past = c.get(path, params={"after_seq": last + 1})
            assert past.status_code == 400, (path, past.text)
            assert past.json()["code"] == "after_seq_beyond_last" and past.json()["last_seq"] == last
            assert "after_seq=0" in past.json()["detail"]
