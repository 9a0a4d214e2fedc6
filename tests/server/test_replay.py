"""Replay then live: a client that leaves and comes back gets every record exactly once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from server_helpers import (
    Server,
    all_events,
    event_seqs,
    is_run_end,
    new_chat,
    noting_live,
    poll,
    wait_run,
    write_script,
    ws_collect,
)


def _slow_server(make_server: Callable[..., Server], tmp_path: Path, deltas: int, delay: str) -> Server:
    script = write_script(tmp_path / "script.ndjson", deltas)
    return make_server(
        sim_env={
            "CURSOR_AGENT_SIM_SCRIPT": str(script),
            "CURSOR_AGENT_SIM_FAULT": "slow",
            "CURSOR_AGENT_SIM_DELAY": delay,
        }
    )


def test_disconnect_mid_run_and_reconnect_from_seq(make_server: Any, tmp_path: Path) -> None:
    # 0.05 s per record (~3 s): the reconnect must come before the run's end to go live; with
    # 0.03 s, a test lagging ~1.4 s after its poll reconnected to a finished run
    server = _slow_server(make_server, tmp_path, 60, "0.05")
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "count"}).json()

        first = asyncio.run(ws_collect(server.ws_url(chat["id"]), is_run_end, limit=8))
        got = event_seqs(first)
        assert got == list(range(1, 9))
        # The run goes on while nobody listens.
        poll(lambda: c.get(f"/api/chats/{chat['id']}").json()["last_seq"] > got[-1] + 5)
        second = asyncio.run(ws_collect(server.ws_url(chat["id"], got[-1]), is_run_end))
        assert second[0]["op"] == "hello" and second[0]["seq"] == got[-1]
        assert any(m["op"] == "live" for m in second)
        final = wait_run(c, run["id"])
        assert final["status"] == "succeeded"

        seqs = got + event_seqs(second)
        stored = all_events(c, chat["id"])
        assert seqs == [e["seq"] for e in stored], "every record exactly once, in order"
        assert [m["event"] for m in first + second if m["op"] == "event"] == stored
        deltas = [e["payload"]["text"] for e in stored if e["type"] == "assistant:delta"]
        assert deltas == [f"{i} " for i in range(60)]


def test_hopping_client_sees_everything_once(make_server: Any, tmp_path: Path) -> None:
    server = _slow_server(make_server, tmp_path, 80, "0.01")
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True)
        c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "count"})
        seen: list[int] = []
        ended = False
        hops = 0
        while not ended:
            hops += 1
            after = seen[-1] if seen else 0
            msgs = asyncio.run(ws_collect(server.ws_url(chat["id"], after), is_run_end, limit=7))
            seen += event_seqs(msgs)
            ended = any(is_run_end(m) for m in msgs)
        assert hops > 3
        assert seen == list(range(1, len(seen) + 1))
        assert seen[-1] == c.get(f"/api/chats/{chat['id']}").json()["last_seq"]


def test_a_hop_amid_a_burst_completes_the_close_handshake(make_server: Any, tmp_path: Path) -> None:
    """A client that leaves while records still pour in (a replay longer than its receive
    queue, ``max_queue`` = 16 frames: its reading pauses) reads on to the server's close frame:
    the close ends with 1000. Unread, that frame waited behind the records until the client's
    ``close_timeout`` (10 s) cut the connection (1006): under load each such hop of
    test_hopping_client_sees_everything_once took 10 s more."""
    from websockets.asyncio.client import ClientConnection

    opened: list[ClientConnection] = []

    class Kept(ClientConnection):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            opened.append(self)

    server = make_server(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(write_script(tmp_path / "s.ndjson", 80))})
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True)
        wait_run(c, c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "count"}).json()["id"])
        assert c.get(f"/api/chats/{chat['id']}").json()["last_seq"] > 80  # one page, one burst
    msgs = asyncio.run(ws_collect(server.ws_url(chat["id"]), is_run_end, limit=7, create_connection=Kept))
    assert event_seqs(msgs) == list(range(1, 8))
    (conn,) = opened
    assert conn.protocol.close_rcvd is not None, "the server's close frame was never read"
    assert conn.close_code == 1000


def test_late_subscriber_gets_the_full_history(server: Server) -> None:
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "list the files"}).json()
        wait_run(c, run["id"])
        stored = all_events(c, chat["id"])
        msgs = asyncio.run(ws_collect(server.ws_url(chat["id"]), lambda m: m["op"] == "live"))
        assert [m["event"] for m in msgs if m["op"] == "event"] == stored
        assert msgs[-1] == {"op": "live", "seq": stored[-1]["seq"]}
        middle = stored[len(stored) // 2]["seq"]
        tail = asyncio.run(ws_collect(server.ws_url(chat["id"], middle), lambda m: m["op"] == "live"))
        assert event_seqs(tail) == [e["seq"] for e in stored if e["seq"] > middle]


def test_two_subscribers_get_identical_streams(make_server: Any, tmp_path: Path) -> None:
    server = _slow_server(make_server, tmp_path, 40, "0.01")
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True)

        async def both() -> list[list[dict[str, Any]]]:
            subscribed = [asyncio.Event(), asyncio.Event()]
            tasks = [asyncio.create_task(ws_collect(server.ws_url(chat["id"]), noting_live(is_run_end, s)))
                     for s in subscribed]
            await asyncio.wait_for(asyncio.gather(*(s.wait() for s in subscribed)), 60)
            await asyncio.to_thread(c.post, f"/api/chats/{chat['id']}/runs", json={"prompt": "count"})
            return list(await asyncio.gather(*tasks))

        a, b = asyncio.run(both())
        assert event_seqs(a) == event_seqs(b) == list(range(1, len(event_seqs(a)) + 1))


def test_ping_pong_and_client_errors(server: Server) -> None:
    from websockets.asyncio.client import connect

    with server.client() as c:
        chat = new_chat(c)

    async def talk() -> list[dict[str, Any]]:
        out = []
        async with connect(server.ws_url(chat["id"])) as ws:
            out.append(orjson.loads(await ws.recv()))  # hello
            out.append(orjson.loads(await ws.recv()))  # live
            await ws.send(orjson.dumps({"op": "ping", "nonce": 42}).decode())
            out.append(orjson.loads(await ws.recv()))
            await ws.send("not json")
            out.append(orjson.loads(await ws.recv()))
            await ws.send('{"op": "subscribe"}')
            out.append(orjson.loads(await ws.recv()))
        return out

    hello, live, pong, bad, unknown = asyncio.run(talk())
    assert hello["op"] == "hello" and hello["seq"] == 0 and hello["last_seq"] == 0
    assert live == {"op": "live", "seq": 0}
    assert pong == {"op": "pong", "seq": 0, "nonce": 42}
    assert bad["op"] == "error" and "JSON" in bad["detail"]
    assert unknown["op"] == "error" and "ping" in unknown["detail"]


def test_slow_client_gets_resync_then_catches_up(make_server: Any, tmp_path: Path) -> None:
    """A client that stops reading overflows its bounded queue: it is told to resync from
    its last seq, and catches up exactly from there."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosedError

    script = write_script(tmp_path / "big.ndjson", 30_000)
    server = make_server(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)}, args=["--ws-queue-size", "8"])
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True)

        async def stalled_then_drain() -> tuple[list[dict[str, Any]], int | None]:
            msgs: list[dict[str, Any]] = []
            async with connect(server.ws_url(chat["id"]), max_queue=1, max_size=None) as ws:
                msgs.append(orjson.loads(await ws.recv()))  # hello
                msgs.append(orjson.loads(await ws.recv()))  # live (nothing stored yet)
                r = await asyncio.to_thread(c.post, f"/api/chats/{chat['id']}/runs", json={"prompt": "count"})
                # Do not read until the run is over.
                await asyncio.to_thread(wait_run, c, r.json()["id"], 300)
                with contextlib.suppress(ConnectionClosedError):  # closed with 4000
                    async for text in ws:
                        msgs.append(orjson.loads(text))
                return msgs, ws.close_code

        msgs, code = asyncio.run(stalled_then_drain())
        assert msgs[-1]["op"] == "resync", msgs[-1]
        assert code == 4000
        seqs = event_seqs(msgs)
        assert msgs[-1]["seq"] == seqs[-1]
        rest = asyncio.run(ws_collect(server.ws_url(chat["id"], seqs[-1]), is_run_end, timeout=300))
        seqs += event_seqs(rest)
        last = c.get(f"/api/chats/{chat['id']}").json()["last_seq"]
        assert seqs == list(range(1, last + 1))
