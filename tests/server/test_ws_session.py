"""A WebSocket does not outlive the session it was opened with (found by a review): a logout on
this server closes it at once; a logout on another server that shares the database, an
expiry, or a deleted row close it at the next check (``session_check_interval``). It gets
an ``error`` message, then close code 4401; no record after the logout."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from inproc import InProcServer
from server_helpers import PG_ENV, Server, is_run_end, new_chat

from cursor_agent_api.server.auth import cookie_name
from cursor_agent_api.server.websocket import CLOSE_SIGNED_OUT


def _login(url: str, token: str) -> str:
    """Sign a fresh 'browser' in with the token; returns its Cookie header."""
    with httpx.Client(base_url=url, timeout=60) as browser:
        r = browser.post("/api/auth/login", json={"token": token})
        assert r.status_code == 204, r.text
        return "; ".join(f"{k}={v}" for k, v in browser.cookies.items())


def _logout(url: str, cookie: str) -> None:
    with httpx.Client(base_url=url, timeout=60) as browser:
        assert browser.post("/api/auth/logout", headers={"Cookie": cookie}).status_code == 204
        assert browser.get("/api/chats", headers={"Cookie": cookie}).status_code == 401


def _ws_url(url: str, chat_id: str) -> str:
    return f"{url.replace('http://', 'ws://')}/api/chats/{chat_id}/stream?after_seq=0"


async def _open(url: str, **kwargs: Any) -> Any:
    """A connected socket, past its ``hello`` and ``live``."""
    from websockets.asyncio.client import connect

    ws = await connect(url, **kwargs)
    for expected in ("hello", "live"):
        msg = json.loads(await asyncio.wait_for(ws.recv(), 30))
        assert msg["op"] == expected, msg
    return ws


async def _until_closed(ws: Any, timeout: float = 60) -> tuple[list[dict[str, Any]], int | None]:
    """Every message until the server closes the socket, and its close code."""
    from websockets.exceptions import ConnectionClosed

    msgs: list[dict[str, Any]] = []

    async def read() -> None:
        while True:
            try:
                msgs.append(json.loads(await ws.recv()))
            except ConnectionClosed:
                return

    await asyncio.wait_for(read(), timeout)
    return msgs, ws.close_code


async def _until(ws: Any, done: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = []
    while not msgs or not done(msgs[-1]):
        msgs.append(json.loads(await asyncio.wait_for(ws.recv(), 90)))
    return msgs


def _assert_signed_out(msgs: list[dict[str, Any]], code: int | None) -> None:
    assert code == CLOSE_SIGNED_OUT == 4401, (code, msgs)
    assert [m["op"] for m in msgs] == ["error"], msgs
    assert "sign in again" in msgs[0]["detail"], msgs


def test_logout_closes_the_sockets_of_that_session_at_once(server: Server) -> None:
    mine, theirs = _login(server.url, server.token), _login(server.url, server.token)
    with server.client() as c:
        chat = new_chat(c)
    url = _ws_url(server.url, chat["id"])

    async def scenario() -> tuple[Any, ...]:
        signed_out = await _open(url, additional_headers={"Cookie": mine})
        other = await _open(url, additional_headers={"Cookie": theirs})
        program = await _open(server.ws_url(chat["id"]))  # the token: no session to end
        try:
            await asyncio.to_thread(_logout, server.url, mine)
            # the owner runs a prompt right after signing that browser out
            with server.client() as c2:
                run = (await asyncio.to_thread(
                    c2.post, f"/api/chats/{chat['id']}/runs", json={"prompt": "secret plan"})).json()
            ended = await asyncio.gather(
                _until_closed(signed_out),
                _until(other, lambda m: is_run_end(m, run["id"])),
                _until(program, lambda m: is_run_end(m, run["id"])),
            )
            return ended[0], ended[1], ended[2]
        finally:
            for ws in (signed_out, other, program):
                await ws.close()

    (msgs, code), other_msgs, program_msgs = asyncio.run(scenario())
    _assert_signed_out(msgs, code)
    # the other browser's session and the token's socket go on, with every record
    for got in (other_msgs, program_msgs):
        assert any(m["op"] == "event" and m["event"]["type"] == "user" for m in got), got
    assert "Traceback" not in server.log_text()


TOKEN = "a-token-shared-by-the-cluster"


def _inproc_login(srv: InProcServer) -> str:
    return _login(srv.url, srv.token)


@pytest.mark.parametrize("via", ["check", "notify"])
def test_logout_on_another_server_closes_the_socket(
    make_inproc: Callable[..., InProcServer], via: str
) -> None:
    """At the socket's next check; at once on PostgreSQL (NOTIFY), before any check."""
    if via == "notify" and not os.environ.get(PG_ENV):
        pytest.skip(f"PostgreSQL only ({PG_ENV}): SQLite has no notifications")
    # one cluster: the same database, the same token
    first = make_inproc(token=TOKEN)
    second = make_inproc(token=TOKEN, session_check_interval=0.2 if via == "check" else 3600)
    cookie = _inproc_login(first)
    # a cluster is one address to a browser: its cookie has one name (after that address's
    # port); here each server has its own port, so the browser's cookie is named for each
    at_second = f"{cookie_name(int(second.url.rsplit(':', 1)[1]))}={cookie.split('=', 1)[1]}"
    with second.client() as c:
        chat = new_chat(c)

    async def scenario() -> tuple[list[dict[str, Any]], int | None]:
        ws = await _open(_ws_url(second.url, chat["id"]), additional_headers={"Cookie": at_second})
        try:
            await asyncio.to_thread(_logout, first.url, cookie)
            return await _until_closed(ws)
        finally:
            await ws.close()

    _assert_signed_out(*asyncio.run(scenario()))


@pytest.mark.parametrize("how", ["idle", "max"])
def test_a_session_that_expires_closes_its_sockets(
    make_inproc: Callable[..., InProcServer], how: str
) -> None:
    srv = make_inproc(session_check_interval=0.2, session_idle_seconds=100, session_max_seconds=150)
    now = [1_800_000_000.0]
    srv.app.state.auth.clock = lambda: now[0]
    cookie = _inproc_login(srv)
    with srv.client() as c:
        chat = new_chat(c)

    # the socket's checks, each with the clock it ran at and its answer (a check the clock
    # moved under is left out): the test waits for two at the clock as it is now
    checks: list[tuple[float, bool]] = []
    checked = threading.Condition()
    session_alive = srv.app.state.auth.session_alive

    async def counted_session_alive(key: str) -> bool:
        at = now[0]
        alive: bool = await session_alive(key)
        with checked:
            if now[0] == at:
                checks.append((at, alive))
            checked.notify_all()
        return alive

    srv.app.state.auth.session_alive = counted_session_alive

    def two_checks_at(at: float) -> list[bool]:
        """The answers of the checks at the clock ``at``: two, or up to the first 'ended'."""
        def answers() -> list[bool]:
            return [alive for t, alive in checks if t == at]

        with checked:
            assert checked.wait_for(lambda: len(answers()) >= 2 or not all(answers()), 60), checks
            return answers()

    async def ping(ws: Any, nonce: int) -> None:
        # two checks at this clock found the session live, and the socket still answers
        assert all(await asyncio.to_thread(two_checks_at, now[0])), checks
        await ws.send(json.dumps({"op": "ping", "nonce": nonce}))
        assert json.loads(await asyncio.wait_for(ws.recv(), 30))["nonce"] == nonce

    async def scenario() -> tuple[list[dict[str, Any]], int | None]:
        ws = await _open(_ws_url(srv.url, chat["id"]), additional_headers={"Cookie": cookie})
        try:
            if how == "idle":
                now[0] += 90  # unused, but inside the idle window
                await ping(ws, 1)
                now[0] += 20  # unused for 110 s: an open socket is not a use
            else:
                for step in (60, 60):  # each use by the page slides the idle expiry
                    now[0] += step
                    r = await asyncio.to_thread(
                        httpx.get, f"{srv.url}/api/chats", headers={"Cookie": cookie})
                    assert r.status_code == 200
                    await ping(ws, step)
                now[0] += 40  # used 40 s ago, but signed in 160 s ago: past the cap
            return await _until_closed(ws)
        finally:
            await ws.close()

    _assert_signed_out(*asyncio.run(scenario()))
