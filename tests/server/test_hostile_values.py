"""Out-of-range numbers and over-long names from the agent, and NUL in user input, against
the store (found by a review, 2026-11-24).

The agent's integers have no upper bound (a Python int), and its names no length: what the
store derives from them into typed columns (``tool_calls.exit_code``, a 32-bit integer;
``duration_ms`` and the times, 64-bit; ``name``, at most 200 characters; the session id) is
bounded there, while the event itself keeps the value as the agent wrote it. Before, on
PostgreSQL the refused write was taken for an outage and retried forever (the run stuck,
the chat answering 409, the server "degraded"); on SQLite a 64-bit overflow lost the whole
batch. A NUL in a title or an id was answered 503 "the database is unavailable" on
PostgreSQL (text cannot hold NUL) and marked the server degraded.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from server_helpers import Server, all_events, is_run_end, new_chat, wait_run
from sqlalchemy.exc import DBAPIError, IntegrityError, InterfaceError
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosedError

from cursor_agent_api.server.store import describe_error, is_transient
from cursor_agent_api.server.store.errors import is_data_error
from cursor_agent_api.sim import wire

SID = "8ef40118-8378-436d-8ba8-2436b19cc877"
TS = 1789644625717
PAST_64_BITS = 1e20
"""On the wire a number past 64 bits is read as a float: the protocol makes it an int
(100000000000000000000), past any integer column and past orjson's 64 bits."""


def _shell_script(path: Path, *, exit_code: Any, completed_ms: int = TS + 3, tokens: Any = 1,
                  duration_ms: Any = 1) -> Path:
    args = wire.shell_args("false", "tool_1", conversation_id=SID, request_id="r1", description="d")
    lines = [
        wire.system_init(SID, "/ws", "GPT-5 Mini"),
        wire.user(SID, "go"),
        wire.tool_call_started(SID, "tool_1", "shellToolCall", args, model_call_id="m",
                               started_at_ms=TS, timestamp_ms=TS),
        wire.tool_call_completed(
            SID, "tool_1", "shellToolCall", wire.shell_outcome("false", "", exit_code, "", "", 3),
            args=args, model_call_id="m", started_at_ms=TS, completed_at_ms=completed_ms,
            timestamp_ms=TS + 3),
        wire.assistant_final(SID, "done"),
        wire.result_success(SID, "r", "done", duration_ms, wire.usage(tokens, 1)),
    ]
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return path


def _named_script(path: Path, *, name: str, session_id: str) -> Path:
    sid = session_id
    lines: list[dict[str, Any]] = [wire.system_init(sid, "/ws", "GPT-5 Mini"), wire.user(sid, "go")]
    for sub, extra in (("started", {}), ("completed", {"result": {"success": {}}})):
        function = {"name": name, "arguments": "{}", **extra}
        lines.append({"type": "tool_call", "subtype": sub, "call_id": "c1", "session_id": sid,
                      "timestamp_ms": TS, "tool_call": {"function": function}})
    lines += [wire.assistant_final(sid, "done"), wire.result_success(sid, "r", "done", 1, wire.usage(1, 1))]
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return path


async def _watched_run(server: Server, c: Any, chat_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Start a run while a WebSocket subscriber is live on the chat: the run, the messages
    the subscriber got until its end."""
    msgs: list[dict[str, Any]] = []
    async with connect(server.ws_url(chat_id), max_size=None) as ws:
        while orjson.loads(await ws.recv()).get("op") != "live":
            pass
        started = await asyncio.to_thread(c.post, f"/api/chats/{chat_id}/runs", json={"prompt": "go"})
        run = started.json()
        while not (msgs and is_run_end(msgs[-1], run["id"])):
            msgs.append(orjson.loads(await asyncio.wait_for(ws.recv(), 60)))
    return run, msgs


def _run(server: Server) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """One run of the server's script (watched live): the run once final, its events, its
    tool calls, the chat."""
    with server.client() as c:
        chat = new_chat(c)
        run, live = asyncio.run(_watched_run(server, c, chat["id"]))
        final = wait_run(c, run["id"], timeout=60)
        live_types = [m["event"]["type"] for m in live if m["op"] == "event"]
        assert "result:success" in live_types and "tool-call-completed" in live_types, live_types
        events = all_events(c, chat["id"])
        calls = c.get(f"/api/runs/{run['id']}/tool-calls").json()["tool_calls"]
        health = c.get("/api/health").json()
        assert health["status"] == "ok", health
        chat = c.get(f"/api/chats/{chat['id']}").json()
        again = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "again"})
        assert again.status_code == 202, again.text  # the chat takes the next prompt
        wait_run(c, again.json()["id"], timeout=60)
    assert "Traceback" not in server.log_text()
    assert [e for e in events if e["subtype"] == "unstorable"] == []  # every record stored as such
    return final, events, calls, chat


def _agent_types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events if e["source"] == "agent"]


@pytest.mark.parametrize("exit_code", [2**31, -(2**31) - 1, 2**63, PAST_64_BITS],
                         ids=["2^31", "-2^31-1", "2^63", "past-64-bits"])
def test_an_exit_code_past_the_column_is_kept_in_the_event_and_the_run_ends(
    make_server: Any, tmp_path: Path, exit_code: Any
) -> None:
    server = make_server(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(_shell_script(tmp_path / "s.jsonl",
                                                                               exit_code=exit_code))})
    final, events, calls, _chat = _run(server)
    assert final["status"] == "succeeded", final
    assert _agent_types(events) == ["system:init", "user", "tool-call-started", "tool-call-completed",
                                    "assistant", "result:success"]
    completed = next(e for e in events if e["type"] == "tool-call-completed")
    outcome = completed["payload"]["data"]["tool_call"]["shellToolCall"]["result"]["failure"]
    assert outcome["exitCode"] == exit_code  # the agent's value, as it wrote it
    (call,) = calls
    assert call["exit_code"] is None  # past a 32-bit integer: no stored exit code
    assert call["status"] == "failed"


def test_times_durations_and_usage_past_64_bits_are_kept_in_the_events_and_the_run_ends(
    make_server: Any, tmp_path: Path
) -> None:
    script = _shell_script(tmp_path / "s.jsonl", exit_code=1, completed_ms=10**20, tokens=PAST_64_BITS,
                           duration_ms=PAST_64_BITS)
    server = make_server(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)})
    final, events, calls, _chat = _run(server)
    assert final["status"] == "succeeded", final
    assert "result:success" in _agent_types(events) and "tool-call-completed" in _agent_types(events)
    (call,) = calls
    assert call["exit_code"] == 1
    assert call["started_ms"] == TS
    # the agent's completion time is past 64 bits: no time (protocol.limits.wire_int), so the
    # line's own timestamp_ms stands in for it
    assert call["completed_ms"] == TS + 3 and call["duration_ms"] == 3
    # a count past 64 bits is no count (protocol.limits.wire_int): the run's usage has none,
    # the result event keeps the agent's value
    assert final["usage"]["input_tokens"] == 0
    result = next(e for e in events if e["type"] == "result:success")
    assert result["payload"]["data"]["usage"]["inputTokens"] == PAST_64_BITS


def test_over_long_names_from_the_agent_are_cut_to_their_columns_and_the_run_ends(
    make_server: Any, tmp_path: Path
) -> None:
    long_session = "s" * 300
    script = _named_script(tmp_path / "s.jsonl", name="n" * 300, session_id=long_session)
    # The simulator gives a replay its own session id: an agent that writes the recording
    # as it is stands in for it here.
    agent = tmp_path / "agent.sh"
    agent.write_text(f"#!/bin/sh\nexec cat '{script}'\n")
    agent.chmod(0o755)
    server = make_server(args=["--agent-binary", str(agent)])
    final, events, calls, chat = _run(server)
    assert final["status"] == "succeeded", final
    assert "result:success" in _agent_types(events)
    started = next(e for e in events if e["type"] == "tool-call-started")
    assert started["payload"]["data"]["tool_call"]["function"]["name"] == "n" * 300  # kept whole
    (call,) = calls
    assert call["name"] == "n" * 200  # tool_calls.name holds 200 characters
    # A session id longer than its column is no session id the agent could resume (a UUID):
    # not kept, as if the agent had given none; the events keep it.
    assert chat["session_id"] is None
    init = next(e for e in events if e["type"] == "system:init")
    assert init["payload"]["data"]["session_id"] == long_session


def test_nul_in_a_title_is_refused_and_in_an_id_is_unknown(server: Server) -> None:
    with server.client() as c:
        r = c.post("/api/chats", json={"workspace": "project", "title": "a\x00b"})
        assert r.status_code == 422 and "title" in r.json()["detail"] and "NUL" in r.json()["detail"], r.text
        chat = new_chat(c)
        r = c.patch(f"/api/chats/{chat['id']}", json={"title": "a\x00b"})
        assert r.status_code == 422 and "NUL" in r.json()["detail"], r.text
        assert c.get(f"/api/chats/{chat['id']}").json()["title"] == chat["title"]
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"}).json()
        wait_run(c, run["id"])
        for method, path, params in [
            ("GET", "/api/chats/a%00b", None),
            ("PATCH", "/api/chats/a%00b", None),
            ("GET", "/api/chats/a%00b/events", None),
            ("POST", "/api/chats/a%00b/runs", None),
            ("GET", "/api/runs/a%00b", None),
            ("POST", "/api/runs/a%00b/cancel", None),
            ("GET", "/api/runs/a%00b/tool-calls", None),
            ("POST", f"/api/runs/{run['id']}/requests/a%00b", None),
            ("GET", f"/api/chats/{chat['id']}/events", {"run_id": "a\x00b"}),
            ("GET", f"/api/chats/{chat['id']}/tool-calls", {"run_id": "a\x00b"}),
        ]:
            body = {"prompt": "hi"} if method == "POST" else {"title": "t"}
            r = c.request(method, path, params=params, json=None if method == "GET" else body)
            assert r.status_code == 404, (method, path, params, r.status_code, r.text)
            assert "a\\x00b" in r.json()["detail"], r.text

    async def ws() -> tuple[list[dict[str, Any]], int | None]:
        msgs = []
        async with connect(server.ws_url("a%00b")) as sock:
            with contextlib.suppress(ConnectionClosedError):
                async for text in sock:
                    msgs.append(orjson.loads(text))
        return msgs, sock.close_code

    msgs, code = asyncio.run(ws())
    assert code == 4404 and msgs[0]["op"] == "error" and "a\\x00b" in msgs[0]["detail"], (code, msgs)
    with server.client() as c:
        health = c.get("/api/health").json()
        assert health["status"] == "ok", health
    assert "Traceback" not in server.log_text()


class _PgError(Exception):
    """What SQLAlchemy's asyncpg adapter puts in ``DBAPIError.orig``: its SQLSTATE in ``pgcode``."""

    def __init__(self, sqlstate: str) -> None:
        super().__init__(f"<class 'asyncpg.exceptions.X'>: refused {sqlstate}")
        self.pgcode = self.sqlstate = sqlstate


@pytest.mark.parametrize(("sqlstate", "transient"), [
    ("22003", False),  # numeric value out of range
    ("22001", False),  # string data right truncation (value too long)
    ("22021", False),  # character not in repertoire (NUL)
    ("22P05", False),  # untranslatable character
    ("22000", False),  # data exception (asyncpg: a parameter out of its type's range)
    ("42601", False),  # syntax error
    ("08006", True),   # connection failure
    ("08003", True),   # connection does not exist
    ("57014", True),   # query canceled (statement timeout)
    ("57P01", True),   # admin shutdown
    ("57P03", True),   # cannot connect now (starting up)
    ("53300", True),   # too many connections
    ("53100", True),   # disk full
    ("40001", True),   # serialization failure
    ("40P01", True),   # deadlock detected
    ("55P03", True),   # lock not available
])
def test_postgresql_errors_are_transient_for_their_sqlstate_only(sqlstate: str, transient: bool) -> None:
    exc = DBAPIError("INSERT INTO t VALUES ($1)", ("secret",), _PgError(sqlstate))
    assert type(exc) is DBAPIError  # what the asyncpg adapter raises for every PostgresError
    assert is_transient(exc) is transient
    assert is_data_error(exc) is sqlstate.startswith("22")
    assert "secret" not in describe_error(exc) and "INSERT" not in describe_error(exc)
    if not transient:
        assert describe_error(exc).startswith("the database refused the write")
    assert not is_transient(IntegrityError("x", {}, _PgError("23505")))


def test_a_plain_database_error_without_a_sqlstate_is_not_transient() -> None:
    assert not is_transient(DBAPIError("x", {}, Exception("something refused")))


def test_any_error_while_connecting_is_transient() -> None:
    """Refused while connecting (SQLAlchemy names no statement): "database ... is not
    currently accepting connections" is SQLSTATE 55000, which a statement may also get."""
    assert is_transient(DBAPIError(None, None, _PgError("55000")))
    assert not is_transient(DBAPIError("SELECT 1", {}, _PgError("55000")))


def test_a_value_asyncpg_cannot_send_is_not_transient() -> None:
    """asyncpg's client-side ``DataError`` is an ``InterfaceError`` (and a ``ValueError``):
    SQLAlchemy's adapter makes it an ``InterfaceError``, which is transient otherwise."""
    import asyncpg  # type: ignore[import-untyped]

    orig = Exception("invalid input")
    orig.__cause__ = asyncpg.exceptions._base.DataError("invalid input for query argument $1")
    assert not is_transient(InterfaceError("x", {}, orig))
    lost = Exception("connection is closed")
    lost.__cause__ = asyncpg.exceptions.ConnectionDoesNotExistError("connection is closed")
    assert is_transient(InterfaceError("x", {}, lost))


@pytest.mark.parametrize("size", [1, 3])
def test_derived_writes_refused_for_their_data_keep_the_batch(
    db_url: str, size: int, caplog: pytest.LogCaptureFixture
) -> None:
    """The writes a batch derives from its records (the turn state) refused for their data
    (an integer past the column: SQLite's OverflowError, PostgreSQL's data error): the
    records are stored all the same, without those writes, and the refusal is logged."""
    from sqlalchemy import bindparam, update

    from cursor_agent_api.server.models import chats
    from cursor_agent_api.server.store import NewRecord, Store

    refused = update(chats).where(chats.c.id == bindparam("chat")).values(updated_ms=bindparam("v"))

    async def main() -> tuple[list[Any], int]:
        store = Store(db_url)
        await store.start()
        try:
            chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
            batch = [NewRecord("agent", "assistant", None, {"n": i}, None) for i in range(size)]
            rows = [{"chat": chat["id"], "v": 2**63}]
            recs = await store.append(chat["id"], batch, writes=lambda _: [(refused, rows)])
            stored = await store.events_after(chat["id"], 0, 100)
            assert [r.seq for r in recs] == [r.seq for r in stored] == list(range(1, size + 1))
            after = await store.get_chat(chat["id"])
            assert after is not None
            return [r.payload for r in stored], int(after["updated_ms"])
        finally:
            await store.close()

    payloads, updated = asyncio.run(main())
    assert payloads == [{"n": i} for i in range(size)]
    assert updated < 2**63
    assert "its records are stored without them" in caplog.text


@pytest.mark.parametrize("field", ["prompt", "title"])
def test_a_lone_surrogate_in_a_prompt_or_title_is_a_client_error(server: Server, field: str) -> None:
    # JSON may escape half of a UTF-16 pair ("\udce9"): no UTF-8 text holds it, and neither
    # the agent's stdin nor the database takes it; the request says so, nothing is stored
    # (the request's validation refuses it: this guards that, as the client now refuses it too)
    raw = b'{"%s": "caf\\udce9"}' % field.encode()
    with server.client() as c:
        chat = new_chat(c)
        if field == "prompt":
            r = c.post(f"/api/chats/{chat['id']}/runs", content=raw,
                       headers={"content-type": "application/json"})
        else:
            r = c.patch(f"/api/chats/{chat['id']}", content=raw,
                        headers={"content-type": "application/json"})
        assert r.status_code == 422 and f"{field}: Input should be a valid string" in r.text, r.text
        assert c.get(f"/api/chats/{chat['id']}/runs").json()["runs"] == []
        assert c.get(f"/api/chats/{chat['id']}").json()["title"] == chat["title"]
    assert "Traceback" not in server.log_text()
