"""What the server cut of a stored tool call is kept apart from the agent's result (review
"contract", 2026-11-25, F1: the list was written under the result's ``"_cut"`` key, so an
agent's result with a key of that name made ``GET …/tool-calls`` a plain-text 500 (a
number), a list of its characters (a string), or the server's own cuts (a fake list), and
the key was taken out of the agent's result). Since migration 0009 the list has its own
column (``tool_calls.cuts``); rows an earlier version wrote (``cuts`` NULL, the list under
``"_cut"``) read as before."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inproc import InProcServer
from server_helpers import new_chat, wait_run
from sqlalchemy import and_, null, update

from cursor_agent_api.server.models import tool_calls
from cursor_agent_api.server.store import Store
from cursor_agent_api.sim import wire

SID = "8ef40118-8378-436d-8ba8-2436b19cc877"
OWN_CUTS: list[Any] = [5, "abc", [{"field": "/args", "bytes": 999_999}]]
"""The agent's own ``"_cut"`` values, one per call (the last one looks like the server's)."""
LONG = "naïve line\n" * 300  # 3,300 bytes: cut at max_field_bytes=1000


def _script(path: Path) -> Path:
    """A run with one read per value of OWN_CUTS, each result carrying it, and a long read
    whose result also has a ``"_cut"`` of the agent's."""
    with path.open("wb") as f:
        f.write(wire.encode(wire.system_init(SID, "/ws", "GPT-5 Mini")))
        contents = ["hi"] * len(OWN_CUTS) + [LONG]
        for n, (own, content) in enumerate(zip([*OWN_CUTS, "mine"], contents, strict=True)):
            args = wire.read_args(f"/ws/f{n}")
            times = {"model_call_id": "m", "started_at_ms": 1, "timestamp_ms": 1}
            f.write(wire.encode(wire.tool_call_started(SID, f"t{n}", "readToolCall", args, **times)))
            result = {"success": {"content": content}, "_cut": own}
            done = wire.tool_call_completed(
                SID, f"t{n}", "readToolCall", result, args=args, completed_at_ms=2, **times
            )
            f.write(wire.encode(done, checked=False))
        f.write(wire.encode(wire.result_success(SID, "r", "done", 1, wire.usage(1, 1))))
    return path


def test_an_agents_own_cut_key_is_its_data(
    make_inproc: Callable[..., InProcServer], tmp_path: Path
) -> None:
    script = _script(tmp_path / "cut.ndjson")
    server = make_inproc(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)}, max_field_bytes=1000)
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "go"}).json()
        assert wait_run(c, run["id"])["status"] == "succeeded"
        for path in (f"/api/chats/{chat['id']}/tool-calls", f"/api/runs/{run['id']}/tool-calls"):
            r = c.get(path)
            assert r.status_code == 200, r.text
            calls = r.json()["tool_calls"]
            assert [call["result"]["_cut"] for call in calls] == [*OWN_CUTS, "mine"]
            assert [call.get("truncated") for call in calls[:3]] == [None, None, None]
            # the long one: the server's cuts, the agent's key kept beside them
            fields = [t["field"] for t in calls[3]["truncated"]]
            assert "/result/success/content" in fields and "/args" not in fields
        turns = c.get(f"/api/chats/{chat['id']}/turns").json()
        views = [i["view"] for i in turns["runs"][0]["items"] if i["type"] == "tool_call"]
        assert [v["cut"] for v in views] == [[], [], [], ["output"]]
        assert [v["output"] for v in views[:3]] == ["hi", "hi", "hi"]


async def _as_written_before_0009(db_url: str, run_id: str, index: int, result: Any) -> None:
    """The run's ``index``-th call as the earlier version wrote it: no ``cuts``, ``result``."""
    store = Store(db_url)
    await store.start()
    try:
        async with store.transaction() as conn:
            where = and_(tool_calls.c.run_id == run_id, tool_calls.c.idx == index)
            await conn.execute(update(tool_calls).where(where).values(cuts=null(), result=result))
    finally:
        await store.close()


def test_a_call_stored_by_the_earlier_version_reads_as_before(
    make_inproc: Callable[..., InProcServer], tmp_path: Path, db_url: str
) -> None:
    """A row of before 0009: a ``"_cut"`` list of ``{"field", "bytes"}`` is the server's (it
    is ``truncated``, not in the result); any other ``"_cut"`` stays the agent's."""
    script = _script(tmp_path / "cut.ndjson")
    server = make_inproc(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)}, max_field_bytes=1000)
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "go"}).json()
        assert wait_run(c, run["id"])["status"] == "succeeded"
        old_cuts = [{"field": "/result/success/content", "bytes": 3300}]
        old = {"success": {"content": "x" * 10}, "_cut": old_cuts}
        asyncio.run(_as_written_before_0009(db_url, run["id"], 0, old))
        asyncio.run(_as_written_before_0009(db_url, run["id"], 1, {"_cut": 7}))
        calls = c.get(f"/api/runs/{run['id']}/tool-calls").json()["tool_calls"]
        assert calls[0]["result"] == {"success": {"content": "x" * 10}}
        assert calls[0]["truncated"] == old_cuts
        assert calls[1]["result"] == {"_cut": 7} and "truncated" not in calls[1]
        turns = c.get(f"/api/chats/{chat['id']}/turns").json()
        views = [i["view"] for i in turns["runs"][0]["items"] if i["type"] == "tool_call"]
        assert views[0]["cut"] == ["output"] and views[1]["cut"] == []


def test_a_cut_reads_range_is_the_whole_contents(
    make_inproc: Callable[..., InProcServer], tmp_path: Path
) -> None:
    """A read cut when stored shows, in the chat's state (a reopened chat), the lines it
    returned, as the live card did: the range was clamped to the lines of the stored, cut
    content (audit 16: "lines 1–100000" live, "lines 1–21846" after a reload)."""
    script = tmp_path / "read.ndjson"
    with script.open("wb") as f:
        f.write(wire.encode(wire.system_init(SID, "/ws", "GPT-5 Mini")))
        args = wire.read_args("/ws/big.log")
        times = {"model_call_id": "m", "started_at_ms": 1, "timestamp_ms": 1}
        f.write(wire.encode(wire.tool_call_started(SID, "t0", "readToolCall", args, **times)))
        result = wire.read_success("/ws/big.log", LONG)  # readRange 1-301 (the CLI's count)
        done = wire.tool_call_completed(SID, "t0", "readToolCall", result, args=args,
                                        completed_at_ms=2, **times)
        f.write(wire.encode(done))
        f.write(wire.encode(wire.result_success(SID, "r", "done", 1, wire.usage(1, 1))))
    server = make_inproc(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)}, max_field_bytes=1000)
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "go"}).json()
        assert wait_run(c, run["id"])["status"] == "succeeded"
        for _ in range(2):  # the same every time
            turns = c.get(f"/api/chats/{chat['id']}/turns").json()
            [view] = [i["view"] for i in turns["runs"][0]["items"] if i["type"] == "tool_call"]
            assert view["cut"] == ["output"]
            assert view["read_range"] == [1, 300]


def _one_long_read(path: Path) -> Path:
    with path.open("wb") as f:
        f.write(wire.encode(wire.system_init(SID, "/ws", "GPT-5 Mini")))
        args = wire.read_args("/ws/big.log")
        times = {"model_call_id": "m", "started_at_ms": 1, "timestamp_ms": 1}
        f.write(wire.encode(wire.tool_call_started(SID, "t0", "readToolCall", args, **times)))
        result = wire.read_success("/ws/big.log", LONG)  # readRange 1-301 (the CLI's count)
        done = wire.tool_call_completed(SID, "t0", "readToolCall", result, args=args,
                                        completed_at_ms=2, **times)
        f.write(wire.encode(done))
        f.write(wire.encode(wire.result_success(SID, "r", "done", 1, wire.usage(1, 1))))
    return path


def test_a_cut_reads_range_is_shown_without_reading_its_records(
    make_inproc: Callable[..., InProcServer], tmp_path: Path, monkeypatch: Any
) -> None:
    """Opening a chat read and folded every cut read's two records whole to count its range
    (review 57: 20 cut 1 MB reads, 89 ms instead of 24; a page could mean ~1 GB parsed). The
    range is counted when the row is written, while the whole content is at hand: the chat's
    state reads no record for it."""
    script = _one_long_read(tmp_path / "read.ndjson")
    server = make_inproc(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)}, max_field_bytes=1000)
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "go"}).json()
        assert wait_run(c, run["id"])["status"] == "succeeded"
        store = server.store
        read: list[int] = []
        get_event = store.get_event

        async def counted(chat_id: str, seq: int, *args: Any, **kwargs: Any) -> Any:
            read.append(seq)
            return await get_event(chat_id, seq, *args, **kwargs)

        monkeypatch.setattr(store, "get_event", counted)
        turns = c.get(f"/api/chats/{chat['id']}/turns").json()
        [view] = [i["view"] for i in turns["runs"][0]["items"] if i["type"] == "tool_call"]
        assert view["cut"] == ["output"] and view["read_range"] == [1, 300]
        assert read == []
        # GET …/tool-calls lists the cut as before: where and how big
        [call] = c.get(f"/api/runs/{run['id']}/tool-calls").json()["tool_calls"]
        assert {"field": "/result/success/content", "bytes": len(LONG.encode())} in call["truncated"]
        assert all(set(t) == {"field", "bytes"} for t in call["truncated"])


async def _without_recorded_range(db_url: str, run_id: str) -> None:
    """The run's first call as stored before its range was recorded in its cut."""
    store = Store(db_url)
    await store.start()
    try:
        async with store.transaction() as conn:
            where = and_(tool_calls.c.run_id == run_id, tool_calls.c.idx == 0)
            cuts = [{"field": "/result/success/content", "bytes": len(LONG.encode())}]
            await conn.execute(update(tool_calls).where(where).values(cuts=cuts))
    finally:
        await store.close()


def test_a_cut_read_stored_before_its_range_was_recorded_reads_its_records(
    make_inproc: Callable[..., InProcServer], tmp_path: Path, db_url: str
) -> None:
    """A cut read's row written before the range was kept in its cut: its range is counted on
    the whole content read from its records, as before (not clamped to the stored beginning)."""
    script = _one_long_read(tmp_path / "read.ndjson")
    server = make_inproc(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)}, max_field_bytes=1000)
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "go"}).json()
        assert wait_run(c, run["id"])["status"] == "succeeded"
        asyncio.run(_without_recorded_range(db_url, run["id"]))
        turns = c.get(f"/api/chats/{chat['id']}/turns").json()
        [view] = [i["view"] for i in turns["runs"][0]["items"] if i["type"] == "tool_call"]
        assert view["cut"] == ["output"] and view["read_range"] == [1, 300]
