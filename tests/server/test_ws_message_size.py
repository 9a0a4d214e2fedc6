"""Every WebSocket message is at most MAX_MESSAGE_BYTES (audit 10, F4: a shell call with 1 MB of
stdout was sent as one 1.25 MB message, a 256 KiB copy of the output in the record's payload and
each of its ``changes`` (``call.result``, ``call.output``, ``view``): Python's ``websockets`` at
its default max_size (1 MiB) closed with 1009, and got the same record again on each reconnect
with ``after_seq``: it could never follow the chat past it)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from inproc import InProcServer
from server_helpers import new_chat, wait_run
from websockets.asyncio.client import connect

from cursor_agent_api.server.log import MAX_MESSAGE_BYTES
from cursor_agent_api.sim import wire

SID = "0ed36493-01b3-4744-b712-a8eabfff89e1"
BIG = "line of a big file\n" * 55_000  # ~1 MB


def _script(path: Path) -> Path:
    """A run with one shell call whose stdout and stderr are ~1 MB each (with its
    interleavedOutput: ~2 MB), the payload alone over the bound with 256 KiB fields."""
    args = wire.shell_args("cat big.txt", "t0", conversation_id=SID, request_id="r", description="Cat")
    times = {"model_call_id": "m", "started_at_ms": 1, "timestamp_ms": 1}
    outcome = wire.shell_outcome("cat big.txt", "/ws", 0, BIG, BIG.upper(), 5)
    with path.open("wb") as f:
        f.write(wire.encode(wire.system_init(SID, "/ws", "GPT-5 Mini")))
        f.write(wire.encode(wire.tool_call_started(SID, "t0", "shellToolCall", args, **times)))
        f.write(wire.encode(wire.tool_call_completed(SID, "t0", "shellToolCall", outcome, args=args,
                                                     completed_at_ms=2, **times), checked=False))
        f.write(wire.encode(wire.result_success(SID, "r", "done", 1, wire.usage(1, 1))))
    return path


async def _follow(url: str, until: Callable[[dict[str, Any]], bool]) -> list[tuple[int, dict[str, Any]]]:
    """The messages (size, message) up to the first ``until`` accepts, read by a client with the
    websockets library's default max_size (1 MiB)."""
    got: list[tuple[int, dict[str, Any]]] = []
    async with connect(url) as ws:
        while True:
            text = await asyncio.wait_for(ws.recv(), 120)
            assert isinstance(text, str)
            msg = orjson.loads(text)
            got.append((len(text.encode()), msg))
            if until(msg):
                return got


def test_no_message_is_over_the_bound_live_or_replayed(
    make_inproc: Callable[..., InProcServer], tmp_path: Path
) -> None:
    script = _script(tmp_path / "big.ndjson")
    server = make_inproc(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)})
    with server.client() as c:
        chat = new_chat(c)
    url = server.url.replace("http://", "ws://") + f"/api/chats/{chat['id']}/stream?token={server.token}"

    async def live() -> list[tuple[int, dict[str, Any]]]:
        follower = asyncio.ensure_future(_follow(
            url, lambda m: m["op"] == "event" and m["event"]["type"] == "run"
            and m["event"]["subtype"] in ("succeeded", "failed")))
        await asyncio.sleep(1)  # (subscribed; records sent after are live or replayed alike)
        with server.client() as c:
            run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "go"}).json()
            assert (await asyncio.to_thread(wait_run, c, run["id"]))["status"] == "succeeded"
        return await follower

    for got in (asyncio.run(live()), asyncio.run(_follow(url, lambda m: m["op"] == "live"))):
        sizes = [size for size, _ in got]
        assert max(sizes) <= MAX_MESSAGE_BYTES, sizes
        changes = [ch for _, m in got for ch in m.get("changes", ()) if ch["kind"] == "tool_call_changed"]
        view = changes[-1]["view"]
        # the page's card: what was cut is listed, and its beginning is there
        assert view["status"] == "succeeded" and "stdout" in view["cut"], view["cut"]
        assert len(view["stdout"]) >= 16 * 1024 and BIG.startswith(view["stdout"])
        # the record says what was cut: the whole is a REST call away
        events = [m["event"] for _, m in got if m["op"] == "event"]
        done = [e for e in events if e["type"] == "tool-call-completed"]
        assert len(done) == 1, [(e["type"], e["subtype"]) for e in events]
        truncated = done[0]["truncated"]
        assert any(t["field"].endswith("/stdout") and t["bytes"] == len(BIG) for t in truncated), truncated
    assert MAX_MESSAGE_BYTES < 1024 * 1024


def test_a_record_of_many_small_values_is_sent_within_the_bound() -> None:
    # nothing to cut in 200,000 short strings: the payload goes, noted, and REST has it
    from cursor_agent_api.server.log import record_message
    from cursor_agent_api.server.store import EventRecord

    files = [f"src/f{i}.py" for i in range(200_000)]
    rec = EventRecord(7, "c", "r", 0, "server", "x", None, {"files": files}, None)
    change = {"kind": "tool_call_changed", "index": 0, "call": {"files": files},
              "view": {"files": files[:10], "cut": []}}
    text = record_message(rec, [change])
    assert len(text.encode()) <= MAX_MESSAGE_BYTES
    msg = orjson.loads(text)
    assert msg["event"]["payload"] == {} and msg["event"]["truncated"][0]["field"] == "/payload"
    assert msg["changes"] == [{"kind": "tool_call_changed", "index": 0,
                               "view": {"files": files[:10], "cut": []}}]
