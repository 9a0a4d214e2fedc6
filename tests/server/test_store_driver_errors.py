"""A database driver's own error that SQLAlchemy did not wrap (asyncpg's ``InterfaceError``
"cannot switch to state 13", a connection refused or reset by the socket, an ``sqlite3``
error) is, at the store's boundary, what any database failure is: the API's JSON 503 ("the
database is unavailable"), a WebSocket's ``error`` and close 1013 — never a plain-text 500
and a traceback in the log. A store that is closed (the server shutting down) says so at once.

The errors are injected where the driver raises them, under SQLAlchemy (its
``before_cursor_execute`` hook: what it raises there goes through SQLAlchemy's own error
handling, which wraps only the DB-API's errors), and for real on PostgreSQL: the server's
database goes away (through a proxy) and comes back."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import sqlite3
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from inproc import InProcServer
from pg_proxy import PgProxy, proxied
from server_helpers import PG_ENV, all_events, new_chat, wait_run, write_script, ws_until_closed
from sqlalchemy import event

from cursor_agent_api.server.store import Store, StoreUnavailableError


def _driver_errors() -> dict[str, Callable[[], BaseException]]:
    """Each error by name: a new one for each raise (one raised twice would chain to itself)."""
    errors: dict[str, Callable[[], BaseException]] = {
        "reset": lambda: ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"),
        "refused": lambda: ConnectionRefusedError(errno.ECONNREFUSED, "Connect call failed"),
        "unreachable": lambda: OSError(errno.EHOSTUNREACH, "No route to host"),
        "sqlite3": lambda: sqlite3.OperationalError("disk I/O error"),
    }
    try:
        import asyncpg  # type: ignore[import-untyped]
    except ImportError:
        return errors
    errors["asyncpg-state"] = lambda: asyncpg.InterfaceError(
        "cannot switch to state 13; another operation is in progress")
    errors["asyncpg-closed"] = lambda: asyncpg.exceptions.ConnectionDoesNotExistError(
        "connection was closed in the middle of operation")
    errors["asyncpg-shutdown"] = lambda: asyncpg.exceptions.CannotConnectNowError(
        "the database system is shutting down")
    return errors


DRIVER_ERRORS = _driver_errors()


@contextmanager
def _raising(store: Store, error: Callable[[], BaseException], only: str = "") -> Iterator[None]:
    """Every statement of ``store`` (whose SQL holds ``only``) raises ``error`` (from the
    driver's side of SQLAlchemy)."""

    def fail(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if only in statement:
            raise error()

    target = store.engine.sync_engine
    event.listen(target, "before_cursor_execute", fail)
    try:
        yield
    finally:
        event.remove(target, "before_cursor_execute", fail)


def _assert_503(r: Any) -> None:
    assert r.status_code == 503, (r.status_code, r.text)
    assert r.headers["content-type"].startswith("application/json"), r.text
    assert "the database is unavailable" in r.json()["detail"], r.text
    assert r.headers["retry-after"] == "5"
    assert "SELECT" not in r.text and "INSERT" not in r.text


@pytest.mark.parametrize("name", list(DRIVER_ERRORS))
def test_an_unwrapped_driver_error_is_a_json_503(
    make_inproc: Callable[..., InProcServer], capfd: Any, name: str
) -> None:
    server = make_inproc()
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"}).json()
        wait_run(c, run["id"])
        capfd.readouterr()
        with _raising(server.store, DRIVER_ERRORS[name]):
            for method, path, body in (
                ("GET", f"/api/runs/{run['id']}", None),  # the finding
                ("GET", f"/api/chats/{chat['id']}", None),
                ("GET", "/api/chats", None),
                ("GET", f"/api/chats/{chat['id']}/runs", None),
                ("GET", f"/api/chats/{chat['id']}/events", None),
                ("GET", f"/api/chats/{chat['id']}/turns", None),
                ("POST", "/api/chats", {"workspace": "project"}),
                ("PATCH", f"/api/chats/{chat['id']}", {"title": "renamed"}),
                ("POST", f"/api/chats/{chat['id']}/runs", {"prompt": "again"}),
            ):
                _assert_503(c.request(method, path, json=body))
        assert c.get(f"/api/runs/{run['id']}").status_code == 200
    logged = capfd.readouterr().err  # the in-process server logs on this process's stderr
    assert "Traceback" not in logged, logged[-3000:]


@pytest.mark.parametrize("name", ["asyncpg-state", "reset"])
def test_a_browser_session_checked_then_is_a_json_503(
    make_inproc: Callable[..., InProcServer], capfd: Any, name: str
) -> None:
    """A request with a session cookie: its check reads the session (in the server's
    authentication check, before any route): the same JSON 503, not the plain-text 500 of
    an error that escaped the app."""
    if name not in DRIVER_ERRORS:
        pytest.skip("needs asyncpg")
    server = make_inproc()
    with httpx.Client(base_url=server.url, timeout=120.0) as browser:
        assert browser.post("/api/auth/login", json={"token": server.token}).status_code == 204
        assert browser.get("/api/chats").status_code == 200
        capfd.readouterr()
        with _raising(server.store, DRIVER_ERRORS[name], only="auth_sessions"):
            r = browser.get("/api/chats")
    assert r.status_code == 503, (r.status_code, r.text)
    assert r.headers["content-type"].startswith("application/json"), r.text
    assert "database is unavailable" in r.json()["detail"], r.text
    logged = capfd.readouterr().err
    assert "Traceback" not in logged, logged[-3000:]


@pytest.mark.parametrize("name", ["asyncpg-state", "reset"])
def test_a_websocket_meeting_one_is_asked_to_reconnect(
    make_inproc: Callable[..., InProcServer], capfd: Any, name: str
) -> None:
    if name not in DRIVER_ERRORS:
        pytest.skip("needs asyncpg")
    server = make_inproc()
    with server.client() as c:
        chat = new_chat(c)
        wait_run(c, c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"}).json()["id"])
    capfd.readouterr()

    with _raising(server.store, DRIVER_ERRORS[name], only="FROM events"):  # the replay's reads
        got, code = asyncio.run(ws_until_closed(server.url, chat['id'], server.token))
    logged = capfd.readouterr().err
    assert "Traceback" not in logged, logged[-3000:]
    assert code == 1013, (code, got)
    assert [m["op"] for m in got] == ["hello", "error"], got
    assert "the database is unavailable" in got[-1]["detail"] and "after_seq=0" in got[-1]["detail"], got


@pytest.mark.parametrize("name", ["asyncpg-state", "asyncpg-closed"])
def test_a_run_whose_writes_meet_one_is_retried_and_loses_nothing(
    make_inproc: Callable[..., InProcServer], tmp_path: Path, name: str
) -> None:
    """The writes of a run's records meet the driver's error three times (on SQLite they
    bypass SQLAlchemy: PostgreSQL only): a transient failure, retried like any lost
    connection; the run succeeds with every record (asyncpg's own errors counted as not
    transient: the run failed)."""
    if not os.environ.get(PG_ENV):
        pytest.skip(f"needs PostgreSQL ({PG_ENV}): SQLite's record writes bypass SQLAlchemy")
    if name not in DRIVER_ERRORS:
        pytest.skip("needs asyncpg")
    script = write_script(tmp_path / "script.ndjson", 10)
    server = make_inproc(sim_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)}, store_retry_max_delay=0.2)
    passed, left = [0], [3]

    def fail(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if "INSERT INTO events" not in statement:
            return
        if passed[0] < 1:  # the prompt's record, stored with the run (the POST's own write)
            passed[0] += 1
        elif left[0] > 0:  # then the run's records, written as the agent runs
            left[0] -= 1
            raise DRIVER_ERRORS[name]()

    target = server.store.engine.sync_engine
    with server.client() as c:
        chat = new_chat(c, stream_partial_output=True)
        event.listen(target, "before_cursor_execute", fail)
        try:
            r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "count"})
            assert r.status_code == 202, r.text
            final = wait_run(c, r.json()["id"])
        finally:
            event.remove(target, "before_cursor_execute", fail)
        assert left == [0], "the writes never met the error"
        assert final["status"] == "succeeded", final
        events = all_events(c, chat["id"])
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert sum(1 for e in events if e["type"] == "assistant:delta") == 10


@pytest.mark.parametrize("name", ["asyncpg-state", "reset"])
def test_a_connection_that_cannot_be_reset_is_one_line_in_the_log(
    make_inproc: Callable[..., InProcServer], caplog: pytest.LogCaptureFixture, name: str
) -> None:
    """The connection a request gives back fails its reset (SQLAlchemy's pool drops it and
    logs it at ERROR, with the traceback): the request is answered, the log has one line."""
    if name not in DRIVER_ERRORS:
        pytest.skip("needs asyncpg")
    server = make_inproc()
    pool = server.store.engine.sync_engine.pool

    def fail(*_args: Any) -> None:
        raise DRIVER_ERRORS[name]()

    with server.client() as c:
        chat = new_chat(c)
        event.listen(pool, "reset", fail)
        try:
            with caplog.at_level(logging.WARNING):
                assert c.get(f"/api/chats/{chat['id']}").status_code == 200
        finally:
            event.remove(pool, "reset", fail)
        assert c.get(f"/api/chats/{chat['id']}").status_code == 200
    logged = [r for r in caplog.records if r.name.startswith("sqlalchemy.pool")]
    assert logged, "the failed reset was not logged"
    for record in logged:
        assert record.exc_info is None and "\n" not in record.getMessage(), record.getMessage()
        assert str(DRIVER_ERRORS[name]().args[-1]) in record.getMessage(), record.getMessage()


@contextmanager
def _served_through_a_proxy(
    tmp_path: Path, db_url: str, workspace: Path, **settings: Any
) -> Iterator[tuple[PgProxy, httpx.Client, dict[str, Any], dict[str, Any]]]:
    """A server whose PostgreSQL is behind a :class:`PgProxy` (so that the cluster the other
    tests use stays up), with a chat and a run of it that ended: ``(proxy, client, chat,
    run)``; the server is stopped and the proxy closed on the way out."""
    if not os.environ.get(PG_ENV):
        pytest.skip(f"needs PostgreSQL ({PG_ENV})")
    server: InProcServer | None = None
    with proxied(db_url) as (proxy, through):
        try:
            server = InProcServer(tmp_path, through, workspace, uuid.uuid4().hex, **settings).start()
            with server.client() as c:
                chat = new_chat(c)
                run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"}).json()
                wait_run(c, run["id"])
                yield proxy, c, chat, run
        finally:
            if server is not None:
                server.stop()


def test_postgresql_stopped_is_a_json_503(
    tmp_path: Path, db_url: str, workspace: Path, capfd: Any
) -> None:
    """For real: the server's PostgreSQL goes away (through a proxy, so that the cluster the
    other tests use stays up) — its connections cut, new ones refused — and comes back."""
    with _served_through_a_proxy(tmp_path, db_url, workspace) as (proxy, c, chat, run):
        capfd.readouterr()
        proxy.stop()
        for _ in range(3):  # the pool's connections are cut, new ones refused
            _assert_503(c.get(f"/api/runs/{run['id']}"))
            _assert_503(c.get(f"/api/chats/{chat['id']}/events"))
        proxy.start()
        assert c.get(f"/api/runs/{run['id']}").json()["status"] == "succeeded"
    logged = capfd.readouterr().err
    assert "Traceback" not in logged, logged[-3000:]


def test_postgresql_that_stops_answering_is_a_json_503_within_its_timeouts(
    tmp_path: Path, db_url: str, workspace: Path, capfd: Any
) -> None:
    """The server's PostgreSQL host stops answering (packets dropped: a network partition, a
    hung host): no request waits for it for ever. A new connection waits
    ``store_connect_timeout``, a statement ``store_statement_timeout``; then the request is the
    503 like any database failure, and once the host answers again the server does too."""
    with _served_through_a_proxy(tmp_path, db_url, workspace, store_connect_timeout=1.0,
                                 store_statement_timeout=1.0) as (proxy, c, chat, run):
        capfd.readouterr()
        proxy.hold()
        for _ in range(3):  # the pool's connections hang, and so do new ones
            # (bounded by the client's 30 s: the server's own wait is what is tested)
            _assert_503(c.get(f"/api/runs/{run['id']}", timeout=30))
            _assert_503(c.get(f"/api/chats/{chat['id']}/events", timeout=30))
        proxy.release()
        assert poll_ok(lambda: c.get(f"/api/runs/{run['id']}")).json()["status"] == "succeeded"
    logged = capfd.readouterr().err
    assert "Traceback" not in logged, logged[-3000:]


def poll_ok(get: Callable[[], Any], tries: int = 20) -> Any:
    """``get()`` until it answers 200 (a connection cut as the host came back may fail once)."""
    for _ in range(tries):
        r = get()
        if r.status_code == 200:
            return r
        _assert_503(r)
    raise AssertionError(f"no 200 in {tries} tries: {r.status_code} {r.text}")


def test_a_closed_store_says_it_is_closed(db_url: str) -> None:
    """A request still in flight when the server shuts down (the store closed under it): the
    store's own error, at once — a 503 — not a ``RuntimeError`` (a plain 500)."""

    async def main() -> None:
        store = Store(db_url)
        await store.start()
        chat = await store.create_chat(workspace=tempfile.gettempdir(), model=None, options={}, title="t")
        await store.close()
        with pytest.raises(StoreUnavailableError, match="closed"):
            await store.get_chat(chat["id"])
        with pytest.raises(StoreUnavailableError, match="closed"):
            await store.get_run("r")
        with pytest.raises(StoreUnavailableError, match="closed"):
            await store.create_chat(workspace=tempfile.gettempdir(), model=None, options={}, title="t")

    asyncio.run(asyncio.wait_for(main(), 60))
