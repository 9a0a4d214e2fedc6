"""A database that fails for a while loses no event and stops no run (issue 11, point 2);
one odd event never destroys a run (point 3).

The faults are injected with the store's hook (``Store.faults``) in a server that runs in
this process, and for real: an SQLite write lock held longer than the busy timeout, and
PostgreSQL connections dropped mid-run (when the tests run on PostgreSQL).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from inproc import InProcServer
from server_helpers import (
    PG_ENV,
    all_events,
    new_chat,
    poll,
    sqlite_write_lock,
    wait_run,
    write_script,
)

from cursor_agent_api.protocol import MAX_JSON_DEPTH
from cursor_agent_api.server.store import NewRecord, Store, StoreUnavailableError
from cursor_agent_api.sim import wire

SLOW = {"CURSOR_AGENT_SIM_FAULT": "slow", "CURSOR_AGENT_SIM_DELAY": "0.04"}


def _script(tmp_path: Path, deltas: int = 40) -> dict[str, str]:
    path = write_script(tmp_path / f"script-{uuid.uuid4().hex[:6]}.ndjson", deltas)
    return {"CURSOR_AGENT_SIM_SCRIPT": str(path), **SLOW}


def _agent_kinds(events: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(e["type"], e["subtype"]) for e in events if e["source"] == "agent"]


def _start(c: Any, chat_id: str, prompt: str = "count") -> dict[str, Any]:
    r = c.post(f"/api/chats/{chat_id}/runs", json={"prompt": prompt})
    assert r.status_code == 202, r.text
    return dict(r.json())


def _stored(c: Any, chat_id: str) -> int:
    return int(c.get(f"/api/chats/{chat_id}").json()["last_seq"])


def _check_log(events: list[dict[str, Any]]) -> None:
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(seqs) + 1)), "seqs must have no gap"


def test_writes_failing_for_seconds_lose_nothing_and_the_run_ends(
    make_inproc: Callable[..., InProcServer], tmp_path: Path
) -> None:
    server = make_inproc(sim_env=_script(tmp_path), store_retry_max_delay=0.2)
    with server.client() as c:
        reference = new_chat(c, stream_partial_output=True)
        assert wait_run(c, _start(c, reference["id"])["id"])["status"] == "succeeded"
        expected = _agent_kinds(all_events(c, reference["id"]))
        assert len(expected) > 40

        chat = new_chat(c, stream_partial_output=True)
        # The outage starts at the run's second write of records, mid-run whatever the
        # machine's speed (polling the stored records, then injecting it, could find the turn
        # over on a loaded machine), and lasts until the health was seen degraded, then 1.5 s.
        armed = server.on_write("events", 2, lambda: server.store.faults.fail_for(600))
        run = _start(c, chat["id"])
        assert armed.wait(60), "the run wrote no second batch of records"
        health = poll(lambda: (h := c.get("/api/health").json())["status"] == "degraded" and h)
        assert health["store"]["status"] == "degraded"
        assert "injected fault" in health["store"]["reason"]
        assert health["store"]["degraded_since_ms"] > 0
        time.sleep(1.5)
        server.store.faults.clear()
        final = wait_run(c, run["id"])
        assert final["status"] == "succeeded", final
        events = all_events(c, chat["id"])
        _check_log(events)
        assert _agent_kinds(events) == expected, "an event was lost or duplicated"
        assert events[-1]["type"] == "run" and events[-1]["subtype"] == "succeeded"
        assert c.get("/api/health").json()["status"] == "ok"
        # The chat takes the next prompt at once.
        assert wait_run(c, _start(c, chat["id"])["id"])["status"] == "succeeded"


def test_n_failed_writes_then_the_run_end_failing_are_retried(
    make_inproc: Callable[..., InProcServer], tmp_path: Path
) -> None:
    server = make_inproc(sim_env=_script(tmp_path, 10), store_retry_max_delay=0.1)
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True)

        def fail() -> None:  # at the run's second write of records: mid-run, whatever the speed
            server.store.faults.fail_writes(5)
            server.store.faults.fail_run_end(4)

        armed = server.on_write("events", 2, fail)
        run = _start(c, chat["id"])
        final = wait_run(c, run["id"])
        assert armed.is_set()
        assert final["status"] == "succeeded", final
        assert final["error"] is None
        events = all_events(c, chat["id"])
        _check_log(events)
        assert [e["subtype"] for e in events if e["type"] == "run"] == ["queued", "running", "succeeded"]
        assert _agent_kinds(events)[-1] == ("result:success", "success")
        assert server.store.faults.run_ends == 0 and server.store.faults.writes == 0
        assert c.get("/api/runs/" + run["id"]).json()["status"] == "succeeded"
        run2 = _start(c, chat["id"])  # not blocked: the end was recorded
        assert wait_run(c, run2["id"])["status"] == "succeeded"


def test_a_creation_during_the_outage_is_a_json_503(make_inproc: Callable[..., InProcServer]) -> None:
    server = make_inproc()
    with server.client() as c:
        chat = new_chat(c)
        server.store.faults.fail_for(60)
        creations = (
            ("/api/chats", {"workspace": "project"}),
            (f"/api/chats/{chat['id']}/runs", {"prompt": "hi"}),
        )
        for path, body in creations:
            r = c.post(path, json=body)
            assert r.status_code == 503, r.text
            assert r.headers["content-type"].startswith("application/json")
            assert "the database is unavailable" in r.json()["detail"]
            assert "INSERT" not in r.text and "UPDATE" not in r.text
            assert r.headers["x-content-type-options"] == "nosniff"
        assert c.get("/api/health").json()["status"] == "degraded"
        server.store.faults.clear()
        assert c.post("/api/chats", json={"workspace": "project"}).status_code == 201
        assert c.get("/api/health").json()["status"] == "ok"
        assert c.get(f"/api/chats/{chat['id']}/runs").json()["runs"] == []


def test_a_buffer_overflow_fails_the_run_clearly_and_keeps_what_it_held(
    make_inproc: Callable[..., InProcServer], tmp_path: Path
) -> None:
    server = make_inproc(sim_env=_script(tmp_path, 60), store_buffer_events=8, store_retry_max_delay=0.1)
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True)
        held: list[Any] = []

        def outage() -> None:  # at the run's second write of records: mid-run, whatever the speed
            held.extend(server.runs._active.values())
            server.store.faults.fail_for(600)

        armed = server.on_write("events", 2, outage)
        run = _start(c, chat["id"])
        assert armed.wait(60), "the run wrote no second batch of records"
        [active] = held
        assert active.run["id"] == run["id"]
        poll(lambda: active.overflow is not None)
        before = _stored(c, chat["id"])  # nothing is stored during the outage
        health = c.get("/api/health").json()
        assert health["status"] == "degraded" and health["store"]["buffered"]["events"] >= 8
        server.store.faults.clear()
        final = wait_run(c, run["id"])
        assert final["status"] == "failed" and final["error_type"] == "StoreUnavailable"
        assert "buffer" in final["error"] and "store_buffer_events=8" in final["error"]
        events = all_events(c, chat["id"])
        _check_log(events)
        # What was buffered is stored: at least the full buffer after what was there before.
        assert len(events) >= before + 8
        assert events[-1]["subtype"] == "failed"
        assert c.get("/api/health").json()["status"] == "ok"


def test_an_sqlite_lock_held_past_the_busy_timeout_is_survived(
    make_inproc: Callable[..., InProcServer], tmp_path: Path, db_url: str
) -> None:
    if not db_url.startswith("sqlite"):
        pytest.skip("an SQLite file lock (PostgreSQL: see the dropped-connection test)")
    server = make_inproc(sim_env=_script(tmp_path), store_busy_timeout=0.3, store_retry_max_delay=0.2)
    path = db_url.split("///", 1)[1]
    with server.client() as c, contextlib.ExitStack() as lock:
        chat = new_chat(c, stream_partial_output=True)
        # The lock is taken (as another process would hold it) at the run's second write of
        # records, mid-run whatever the machine's speed: taken after polling the stored
        # records, it could come after the turn's last write on a loaded machine.
        armed = server.on_write("events", 2, lambda: lock.enter_context(sqlite_write_lock(path)))
        run = _start(c, chat["id"])
        assert armed.wait(60), "the run wrote no second batch of records"
        with lock:
            health = poll(lambda: (h := c.get("/api/health").json())["status"] == "degraded" and h)
            assert "locked" in health["store"]["reason"]
            # Held for ten busy timeouts: every write attempt in between failed.
            time.sleep(3.0)
            assert server.runs.is_active(run["id"])
        final = wait_run(c, run["id"])
        assert final["status"] == "succeeded", final
        events = all_events(c, chat["id"])
        _check_log(events)
        assert _agent_kinds(events)[-1] == ("result:success", "success")
        assert sum(1 for e in events if e["type"] == "assistant:delta") == 40


def test_dropped_postgresql_connections_are_survived(
    make_inproc: Callable[..., InProcServer], tmp_path: Path, db_url: str
) -> None:
    if not os.environ.get(PG_ENV):
        pytest.skip(f"needs PostgreSQL ({PG_ENV})")
    import asyncpg  # type: ignore[import-untyped]
    from sqlalchemy.engine import make_url

    server = make_inproc(sim_env=_script(tmp_path), store_retry_max_delay=0.2)
    url = make_url(db_url)
    name = url.database
    admin = url.set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)

    async def admin_sql(*sql: str) -> None:
        conn = await asyncpg.connect(admin)
        try:
            for statement in sql:
                await conn.execute(statement)
        finally:
            await conn.close()

    drop = (
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        f"WHERE datname = '{name}' AND pid <> pg_backend_pid()"
    )
    def outage() -> None:  # in the server's thread, which waits for it
        worker = threading.Thread(
            target=asyncio.run, args=(admin_sql(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false', drop),))
        worker.start()
        worker.join(60)

    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True)
        # Unavailable for a while: no new connection is accepted, the open ones are dropped;
        # from the run's second write of records, mid-run whatever the machine's speed (after
        # polling the stored records, it could come after the turn's last write when loaded).
        armed = server.on_write("events", 2, outage)
        run = _start(c, chat["id"])
        assert armed.wait(60), "the run wrote no second batch of records"
        try:
            time.sleep(1.5)
            assert server.runs.is_active(run["id"])
        finally:
            asyncio.run(admin_sql(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true'))
        asyncio.run(admin_sql(drop))  # and once more, after
        final = wait_run(c, run["id"])
        assert final["status"] == "succeeded", final
        events = all_events(c, chat["id"])
        _check_log(events)
        assert sum(1 for e in events if e["type"] == "assistant:delta") == 40
        assert _agent_kinds(events)[-1] == ("result:success", "success")


# ---- point 3: one odd event ------------------------------------------------------------------


def _deep_script(path: Path, depth: int) -> Path:
    sid = "8ef40118-8378-436d-8ba8-2436b19cc877"
    inner = "[" * (depth - 1) + "]" * (depth - 1)
    message = b',"message":{"role":"assistant","content":[]}}\n'
    deep = b'{"type":"assistant","nested":' + inner.encode() + message
    with path.open("wb") as f:
        f.write(wire.encode(wire.system_init(sid, "/ws", "GPT-5 Mini")))
        f.write(wire.encode(wire.user(sid, "deep")))
        f.write(wire.encode(wire.assistant_final(sid, "before")))
        f.write(deep)
        f.write(wire.encode(wire.assistant_final(sid, "after")))
        f.write(wire.encode(wire.result_success(sid, "r", "beforeafter", 1, wire.usage(1, 2))))
    return path


@pytest.mark.parametrize("depth", [300, 1000])
def test_a_300_deep_event_is_stored_with_its_batch_and_the_run_succeeds(
    make_inproc: Callable[..., InProcServer], tmp_path: Path, depth: int
) -> None:
    script = _deep_script(tmp_path / "deep.ndjson", depth)
    # The simulator re-encodes what it replays (orjson stops at 255 levels): an agent that
    # writes the recording as it is stands in for it here.
    agent = tmp_path / "agent.sh"
    agent.write_text(f"#!/bin/sh\nexec cat '{script}'\n")
    agent.chmod(0o755)
    server = make_inproc(agent_binary=str(agent))
    with server.client() as c:
        chat = new_chat(c)
        final = wait_run(c, _start(c, chat["id"])["id"])
        assert final["status"] == "succeeded", final
        assert final["result"] == "beforeafter"
        r = c.get(f"/api/chats/{chat['id']}/events", params={"include_raw": True})
        events = r.json()["events"]
        _check_log(events)
        kinds = _agent_kinds(events)
        assert kinds[:3] == [("system:init", "init"), ("user", None), ("assistant", None)]
        assert kinds[-2:] == [("assistant", None), ("result:success", "success")]
        deep = next(e for e in events if e["type"] == "raw")
        assert deep["payload"]["data"]["code"] == "too_deep"
        assert deep["payload"]["data"]["limit"] == MAX_JSON_DEPTH
        assert deep["raw"].count("[") == depth  # the nesting and the empty content list


def test_an_unserializable_record_does_not_roll_back_its_batch(db_url: str) -> None:
    deep: list[Any] = []
    node = deep
    for _ in range(400):
        node.append([])
        node = node[0]

    async def main() -> list[Any]:
        store = Store(db_url)
        await store.start()
        try:
            chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
            batch = [
                NewRecord("agent", "user", None, {"text": "before"}, '{"type":"user"}'),
                NewRecord("agent", "assistant", None, {"data": deep}, '{"type":"assistant","x":[[]]}'),
                NewRecord("agent", "assistant", None, {"bad": {1, 2}}, "{}"),
                NewRecord("agent", "result", "success", {"text": "after"}, '{"type":"result"}'),
            ]
            recs = await store.append(chat["id"], batch)
            stored = await store.events_after(chat["id"], 0, 100)
            assert [r.seq for r in recs] == [r.seq for r in stored] == [1, 2, 3, 4]
            return [(r.type, r.subtype, r.payload, r.raw) for r in stored]
        finally:
            await store.close()

    stored = asyncio.run(main())
    assert stored[0][2] == {"text": "before"} and stored[3][2] == {"text": "after"}
    for _type, subtype, payload, raw in stored[1:3]:
        assert (_type, subtype) == ("raw", "unstorable")
        assert payload["unstorable"]["type"] == "assistant"
        assert "cannot be serialized" in payload["unstorable"]["reason"]
        assert raw is not None
    orjson.dumps(stored)


def test_run_errors_never_contain_sql(
    make_inproc: Callable[..., InProcServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write the database refuses (not a transient failure) fails the run with a
    message that names the error, not the statement or its parameters."""
    from sqlalchemy import text

    from cursor_agent_api.server import store as turn_store

    server = make_inproc()
    original = turn_store.turn_writes

    def refused(*args: Any) -> list[tuple[Any, list[dict[str, Any]]]]:
        # a batch's turn state written with a statement the database refuses
        bad = (text("INSERT INTO no_such_table VALUES (:v)"), [{"v": "secret-param"}])
        return [*original(*args), bad]

    monkeypatch.setattr(turn_store, "turn_writes", refused)
    with server.client() as c:
        chat = new_chat(c)
        final = wait_run(c, _start(c, chat["id"], "list the files")["id"])
        assert final["status"] == "failed"
        assert final["error"], final
        for word in ("INSERT", "no_such_table VALUES", "secret-param", "[SQL", "parameters"):
            assert word not in final["error"], final["error"]
        assert c.get("/api/health").json()["status"] == "ok"  # not an outage


def test_injected_faults_raise_inside_the_transaction(db_url: str) -> None:
    async def main() -> tuple[int, int]:
        store = Store(db_url)
        await store.start()
        try:
            chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
            store.faults.fail_writes(1)
            with pytest.raises(StoreUnavailableError):
                await store.append(chat["id"], [NewRecord("server", "note", None, {})])
            assert store.health.degraded
            await store.append(chat["id"], [NewRecord("server", "note", None, {})])
            assert not store.health.degraded
            got = await store.get_chat(chat["id"])
            assert got is not None
            return got["last_seq"], await store.count_events(chat["id"])
        finally:
            await store.close()

    assert asyncio.run(main()) == (1, 1)


# ---- point 4: answers bounded by bytes -------------------------------------------------------


def _long_script(path: Path, text: str, lines: int) -> Path:
    sid = "8ef40118-8378-436d-8ba8-2436b19cc877"
    with path.open("wb") as f:
        f.write(wire.encode(wire.system_init(sid, "/ws", "GPT-5 Mini")))
        f.write(wire.encode(wire.user(sid, "long")))
        for _ in range(lines):
            f.write(wire.encode(wire.assistant_final(sid, text)))
        f.write(wire.encode(wire.result_success(sid, "r", "done", 1, wire.usage(1, 2))))
    return path


def test_long_fields_are_cut_with_a_flag_and_the_whole_value_is_one_request_away(
    make_inproc: Callable[..., InProcServer], tmp_path: Path
) -> None:
    from server_helpers import ws_collect

    text = "naïve café 日本 🚀 " * 400  # about 9 KB, non-ASCII
    script = _long_script(tmp_path / "long.ndjson", text, 12)
    server = make_inproc(
        sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)}, max_field_bytes=1000, max_page_bytes=6000
    )
    with server.client() as c:
        chat = new_chat(c)
        base = server.url.replace("http", "ws")
        ws_url = f"{base}/api/chats/{chat['id']}/stream?after_seq=0&token={server.token}"

        async def live() -> list[dict[str, Any]]:
            from server_helpers import is_run_end, noting_live

            subscribed = asyncio.Event()
            task = asyncio.create_task(ws_collect(ws_url, noting_live(is_run_end, subscribed)))
            await asyncio.wait_for(subscribed.wait(), 60)
            await asyncio.to_thread(_start, c, chat["id"])
            return await task

        live_msgs = asyncio.run(live())
        run = c.get(f"/api/chats/{chat['id']}/runs").json()["runs"][0]
        assert wait_run(c, run["id"])["status"] == "succeeded"
        # REST: pages stop at about max_page_bytes; every record comes, once, in order.
        pages, after, events = 0, 0, []
        while True:
            r = c.get(f"/api/chats/{chat['id']}/events", params={"after_seq": after, "include_raw": True})
            body = r.json()
            assert len(r.content) < 6000 + 8000  # one record over the budget at most
            events += body["events"]
            pages += 1
            after = body["next_after_seq"]
            if not body["has_more"]:
                break
        assert pages > 2
        _check_log(events)
        long = [e for e in events if e["type"] == "assistant"]
        assert len(long) == 12
        whole = len(text.encode())
        for e in long:
            fields = {t["field"]: t["bytes"] for t in e["truncated"]}
            assert fields["/payload/text"] == whole
            assert fields["/payload/data/message/content/0/text"] == whole
            assert fields["/raw"] > whole
            assert len(e["payload"]["text"].encode()) <= 1000 and text.startswith(e["payload"]["text"])
            assert len(e["raw"].encode()) <= 1000
        first = long[0]
        url = f"/api/chats/{chat['id']}/events/{first['seq']}/value"
        r = c.get(url, params={"field": "/payload/text"})
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
        assert r.text == text
        raw = c.get(url, params={"field": "/raw"}).text
        assert orjson.loads(raw)["message"]["content"][0]["text"] == text
        assert c.get(url, params={"field": "/payload/data/message"}).json()["content"][0]["text"] == text
        assert c.get(url, params={"field": "/payload/nope"}).status_code == 404
        missing = c.get(f"/api/chats/{chat['id']}/events/9999/value", params={"field": "/raw"})
        assert missing.status_code == 404
        # Records without a long field carry no flag.
        assert all("truncated" not in e for e in events if e["type"] in ("run", "user"))
        # WebSocket, live and replayed: the same cut records.
        live_events = [m["event"] for m in live_msgs if m.get("op") == "event"]
        assert [e["seq"] for e in live_events] == [e["seq"] for e in events]
        replay = asyncio.run(
            ws_collect(ws_url, lambda m: m.get("op") == "live"),
        )
        replayed = [m["event"] for m in replay if m.get("op") == "event"]
        assert [e["seq"] for e in replayed] == [e["seq"] for e in events]
        for got in (live_events, replayed):
            cut = [e for e in got if e["type"] == "assistant"]
            assert all(len(e["payload"]["text"].encode()) <= 1000 and e["truncated"] for e in cut)
            assert all("/raw" not in {t["field"] for t in e["truncated"]} for e in cut)


def test_a_line_equal_to_its_data_is_stored_once_and_rebuilt_exactly(db_url: str) -> None:
    from sqlalchemy import select

    from cursor_agent_api.protocol import parse_event
    from cursor_agent_api.server.models import events as events_table
    from cursor_agent_api.server.store import agent_payload

    compact = '{"type":"assistant","message":{"content":[{"type":"text","text":"hi é"}]}}'.encode()
    # Same data, other bytes: an escape, spaces. Kept as they came.
    spaced = b'{"type":"assistant","message":{"content":[{"type":"text","text":"hi \\u00e9"}]}}'


    async def main() -> tuple[list[Any], list[dict[str, Any]]]:
        store = Store(db_url)
        await store.start()
        try:
            chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
            new = [
                NewRecord("agent", e.type.value, e.subtype, agent_payload(e), e.line)
                for e in (parse_event(compact), parse_event(spaced))
            ]
            await store.append(chat["id"], new)
            async with store.engine.connect() as conn:
                cols = (events_table.c.payload, events_table.c.raw)
                rows = (await conn.execute(select(*cols).order_by(events_table.c.seq))).all()
            recs, _ = await store.read_page(
                chat["id"], 0, 10, max_bytes=1 << 20, max_field_bytes=1 << 20, include_raw=True
            )
            return [tuple(r) for r in rows], [r.to_dict(True) for r in recs]
        finally:
            await store.close()

    stored, served = asyncio.run(main())
    assert stored[0] == (None, compact)  # the line alone, as it came: its data is read from it
    assert stored[1][0] is not None and stored[1][1] == spaced  # other bytes: kept as they came
    assert served[0]["raw"] == compact.decode() and served[1]["raw"] == spaced.decode()
    assert served[0]["payload"]["text"] == "hi é"
    assert served[0]["payload"]["data"] == orjson.loads(compact)


def test_tool_calls_keep_long_values_cut_once_and_say_so(
    make_inproc: Callable[..., InProcServer], tmp_path: Path
) -> None:
    sid = "8ef40118-8378-436d-8ba8-2436b19cc877"
    content = "naïve line\n" * 1000  # 11,000 bytes
    args = wire.read_args("/ws/big.log")
    times = {"model_call_id": "mc", "started_at_ms": 1, "timestamp_ms": 1}
    script = tmp_path / "tool.ndjson"
    with script.open("wb") as f:
        f.write(wire.encode(wire.system_init(sid, "/ws", "GPT-5 Mini")))
        f.write(wire.encode(wire.tool_call_started(sid, "call_1", "readToolCall", args, **times)))
        done = wire.tool_call_completed(
            sid, "call_1", "readToolCall", wire.read_success("/ws/big.log", content), args=args,
            completed_at_ms=2, **times,
        )
        f.write(wire.encode(done))
        f.write(wire.encode(wire.result_success(sid, "r", "done", 1, wire.usage(1, 2))))
    server = make_inproc(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)}, max_field_bytes=1000)
    with server.client() as c:
        chat = new_chat(c)
        assert wait_run(c, _start(c, chat["id"])["id"])["status"] == "succeeded"
        (call,) = c.get(f"/api/chats/{chat['id']}/tool-calls").json()["tool_calls"]
        cuts = {t["field"]: t["bytes"] for t in call["truncated"]}
        whole = len(content.encode())
        assert cuts == {"/result/success/content": whole, "/output": whole}
        assert len(call["output"].encode()) <= 1000 and content.startswith(call["output"])
        assert "_cut" not in call["result"] and call["result"]["success"]["path"].endswith("/big.log")
        # The whole output is in the call's completed record.
        url = f"/api/chats/{chat['id']}/events/{call['completed_seq']}/value"
        field = "/payload/data/tool_call/readToolCall/result/success/content"
        assert c.get(url, params={"field": field}).text == content


def test_a_failed_write_counts_once_in_health(make_inproc: Callable[..., InProcServer]) -> None:
    # the store's transaction counts a transient failure; the API's 503 handler then saw the
    # same error and counted it again (failed_writes 2 for one failed write)
    server = make_inproc()
    with server.client() as c:
        server.store.faults.fail_writes(1)
        r = c.post("/api/chats", json={})
        assert r.status_code == 503, r.text
        store = c.get("/api/health").json()["store"]
        assert store["status"] == "degraded" and store["failed_writes"] == 1, store
        server.store.faults.fail_writes(2)
        assert c.post("/api/chats", json={}).status_code == 503
        assert c.post("/api/chats", json={}).status_code == 503
        assert c.get("/api/health").json()["store"]["failed_writes"] == 3
