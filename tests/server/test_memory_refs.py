"""The server keeps no second copy of a big line (issue 11, point 4).

No RSS is measured here (``bench/bench_memory.py`` does, side by side): these tests check
the references. The server runs in this process so that its objects can be inspected.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from inproc import InProcServer
from server_helpers import all_events, new_chat, wait_run

from cursor_agent_api.client import AsyncStreamingResponse
from cursor_agent_api.protocol import AgentEvent
from cursor_agent_api.runtime import sinks
from cursor_agent_api.server.runner import AgentLaunch, agent_config
from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.sim import wire

BIG = 300_000



def _big_script(path: Path, lines: int) -> Path:
    sid = "8ef40118-8378-436d-8ba8-2436b19cc877"
    times = {"model_call_id": "mc", "started_at_ms": 1, "timestamp_ms": 1}
    with path.open("wb") as f:
        f.write(wire.encode(wire.system_init(sid, "/ws", "GPT-5 Mini")))
        for i in range(lines):
            f.write(orjson.dumps({"type": "x_big", "session_id": sid, "blob": f"{i}" * BIG}) + b"\n")
            args = wire.read_args(f"/ws/{i}.log")
            f.write(wire.encode(wire.tool_call_started(sid, f"c{i}", "readToolCall", args, **times)))
            done = wire.tool_call_completed(sid, f"c{i}", "readToolCall",
                                            wire.read_success(f"/ws/{i}.log", f"{i}" * BIG),
                                            args=args, completed_at_ms=2, **times)
            f.write(wire.encode(done, checked=False))
            f.write(wire.encode(wire.assistant_final(sid, f"{i}" * BIG), checked=False))
        f.write(wire.encode(wire.result_success(sid, "r", "done", 1, wire.usage(1, 2))))
    return path


def _alive(lines: set[bytes]) -> int:
    """How many big events of these lines are alive.

    ``type(o) is``, not ``isinstance``: the scan sees every object of the process, and
    ``isinstance`` falls back to ``o.__class__``, which some objects (a proxy left by
    another test) make raise; raised inside the stream's iteration, that made the server
    stop the run (the run ended ``cancelled``: the open bug this test was marked for)."""
    return sum(1 for o in gc.get_objects()
               if type(o) is AgentEvent and len(o.line or b"") > BIG and o.line in lines)


def test_the_server_asks_for_no_text_or_outputs() -> None:
    cfg = agent_config(ServerSettings(token="t" * 16), AgentLaunch("hi", "/w", None, {}))
    assert cfg.keep_events is False and cfg.keep_content is False


def test_no_stored_event_is_alive_when_the_next_is_read(
    tmp_path: Path, make_inproc: Callable[..., InProcServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each big line is stored alone (batch_max_bytes), and the pump waits for it to be
    # stored before it asks the client for the next event: by then nothing may hold the
    # stored one (before: the pump's loop variable did). Counted when the stream has handed out all it read
    # (a batch of several events is held until its last one is taken, at once).
    seen: list[int] = []
    handed_out: set[bytes] = set()  # the lines the server took (not the client's read-ahead)
    original = AsyncStreamingResponse.__anext__

    async def anext(self: AsyncStreamingResponse) -> AgentEvent:
        if self._index >= len(self._batch):  # it will wait for the client to read on
            seen.append(_alive(handed_out))
        event = await original(self)
        if len(event.line or b"") > BIG:
            handed_out.add(event.line)  # the line, not the event
        return event

    monkeypatch.setattr(AsyncStreamingResponse, "__anext__", anext)
    # the client reads ahead 8 KiB, not 8 MiB: one big line at a time
    monkeypatch.setattr(sinks.HeldEventQueue.__init__, "__defaults__", (2, 1))
    script = _big_script(tmp_path / "big.ndjson", 3)
    server = make_inproc(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)}, batch_max_bytes=1000)
    with server.client() as c:
        chat = new_chat(c)
        r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "big"})
        final = wait_run(c, r.json()["id"])
        assert final["status"] == "succeeded" and final["result"] == "done"
        kinds = [(e["type"], e["subtype"]) for e in all_events(c, chat["id"]) if e["source"] == "agent"]
        assert kinds.count(("unknown", None)) == 3 and kinds.count(("assistant", None)) == 3
        calls = c.get(f"/api/chats/{chat['id']}/tool-calls").json()["tool_calls"]
        assert [t["status"] for t in calls] == ["succeeded"] * 3
    assert len(seen) > 5 and max(seen) == 0, str(seen)


def test_an_error_while_reading_the_stream_fails_the_run_with_it(
    tmp_path: Path, make_inproc: Callable[..., InProcServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's own reading of the client's stream fails (here: on the second event):
    the agent is stopped and the run is ``failed`` with that error, not ``cancelled``."""
    original = AsyncStreamingResponse.__anext__
    calls = []

    async def anext(self: AsyncStreamingResponse) -> AgentEvent:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("the consumer broke")
        return await original(self)

    monkeypatch.setattr(AsyncStreamingResponse, "__anext__", anext)
    script = _big_script(tmp_path / "big.ndjson", 3)
    server = make_inproc(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)})
    with server.client() as c:
        chat = new_chat(c)
        r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "big"})
        final = wait_run(c, r.json()["id"])
    assert final["status"] == "failed", final
    assert final["error_type"] == "RuntimeError" and "the consumer broke" in final["error"]
