"""The WebSocket's replay folds the stored records as the live stream did (review of
2026-11-24): a record read cut for the page is folded whole (only its changes are cut),
and resuming at the end of a big run rebuilds the run's fold a page at a time, not all of
its records at once.
"""

from __future__ import annotations

import asyncio
import tracemalloc
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from inproc import InProcServer
from server_helpers import is_run_end, new_chat, noting_live, wait_run, write_script, ws_collect

from cursor_agent_api.sim import wire


def _changes(msgs: list[dict[str, Any]]) -> list[tuple[int, list[dict[str, Any]]]]:
    return [(m["seq"], m["changes"]) for m in msgs if m.get("op") == "event" and m.get("changes")]


def test_replayed_changes_are_the_live_ones_for_values_over_the_field_limit(
    make_inproc: Callable[..., InProcServer], tmp_path: Path
) -> None:
    script = write_script(tmp_path / "long.ndjson", 600)  # a final message of ~2.3 KB
    server = make_inproc(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)}, max_field_bytes=1000)
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True)
        ws_url = f"{server.url.replace('http', 'ws')}/api/chats/{chat['id']}/stream?token={server.token}"

        async def live() -> list[dict[str, Any]]:
            subscribed = asyncio.Event()
            until = noting_live(is_run_end, subscribed)
            task = asyncio.create_task(ws_collect(ws_url + "&after_seq=0", until))
            await asyncio.wait_for(subscribed.wait(), 60)
            r = await asyncio.to_thread(c.post, f"/api/chats/{chat['id']}/runs", json={"prompt": "go"})
            assert r.status_code == 202, r.text
            return await task

        live_changes = _changes(asyncio.run(live()))
        replayed = _changes(asyncio.run(ws_collect(ws_url + "&after_seq=0", is_run_end)))
        assert replayed == live_changes
        kinds = [ch["kind"] for _, changes in live_changes for ch in changes]
        assert "result_received" in kinds
        # and a replay that starts at the final message folds it whole too
        final = next(seq for seq, changes in live_changes
                     if any(ch["kind"] == "result_received" for ch in changes))
        resumed = _changes(asyncio.run(ws_collect(ws_url + f"&after_seq={final - 2}", is_run_end)))
        assert resumed == [x for x in live_changes if x[0] > final - 2]


BLOB = 400_000
LINES = 60


def _big_run(path: Path) -> Path:
    sid = "8ef40118-8378-436d-8ba8-2436b19cc877"
    with path.open("wb") as f:
        f.write(wire.encode(wire.system_init(sid, "/ws", "GPT-5 Mini")))
        for i in range(LINES):
            f.write(orjson.dumps({"type": "x_big", "session_id": sid, "blob": f"{i % 10}" * BLOB}) + b"\n")
        f.write(wire.encode(wire.assistant_final(sid, "done")))
        f.write(wire.encode(wire.result_success(sid, "r", "done", 1, wire.usage(1, 2))))
    return path


def test_resuming_at_the_end_of_a_big_run_holds_a_page_not_the_run(
    make_inproc: Callable[..., InProcServer], tmp_path: Path
) -> None:
    script = _big_run(tmp_path / f"big-{uuid.uuid4().hex[:6]}.ndjson")
    server = make_inproc(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)})
    with server.client() as c:
        chat = new_chat(c)
        r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "go"})
        assert wait_run(c, r.json()["id"])["status"] == "succeeded"
        last = int(c.get(f"/api/chats/{chat['id']}").json()["last_seq"])
        ws_url = (f"{server.url.replace('http', 'ws')}/api/chats/{chat['id']}/stream"
                  f"?token={server.token}&after_seq={last - 2}")
        tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            msgs = asyncio.run(ws_collect(ws_url, is_run_end))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        changes = _changes(msgs)
        assert any(ch["kind"] == "result_received" for _, cs in changes for ch in cs)
        run_bytes = LINES * BLOB  # 24 MB of records before the resume point
        held = f"resuming held {peak / 1e6:.1f} MB for a run of {run_bytes / 1e6:.0f} MB"
        assert peak < run_bytes / 3, held
