"""Browser sign-in (issue 11, point 1): sessions that can be revoked and do not leak across ports."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import SERVE, Server

from cursor_agent_api.cli.serve import listen_socket
from cursor_agent_api.server.auth import Auth, cookie_name
from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.store import Store


def _sign_in(server: Server, code: str | None = None) -> tuple[str, str]:
    """Open the printed link in a fresh 'browser'; returns the session cookie (name, value)."""
    with server.anon(follow_redirects=False) as browser:
        r = browser.get("/", params={"code": code or server.login_code})
        assert r.status_code == 303 and r.headers["location"] == "/", r.text
        name, value = r.headers["set-cookie"].split(";")[0].split("=", 1)
        return name, value


def _status_with_cookie(server: Server, name: str, value: str, path: str = "/api/chats") -> int:
    with server.anon() as c:
        return c.get(path, headers={"Cookie": f"{name}={value}"}).status_code


def test_one_time_code_signs_in_once(server: Server) -> None:
    name, value = _sign_in(server)
    assert name == cookie_name(server.port)
    assert value and server.token not in value and server.login_code not in value
    assert _status_with_cookie(server, name, value) == 200
    # The link in the browser's history is dead: a second visit gets no cookie.
    with server.anon(follow_redirects=False) as again:
        r = again.get("/", params={"code": server.login_code})
        # the secret leaves the address; the page is told why it must sign in again
        assert r.status_code == 303 and r.headers["location"] == "/?signin=refused"
        assert "set-cookie" not in r.headers
        assert again.get("/api/chats").status_code == 401
    # A code is not a token.
    with server.anon() as c:
        assert c.get("/api/chats", headers={"Authorization": f"token {server.login_code}"}).status_code == 401


def test_logout_revokes_the_session(server: Server) -> None:
    name, value = _sign_in(server)
    with server.anon() as browser:
        browser.cookies.set(name, value)
        # A session cannot mint sign-in links (they would outlive its logout); the token can.
        r = browser.post("/api/auth/codes", headers={"Origin": server.url})
        assert r.status_code == 403 and "token" in r.json()["detail"]
        assert browser.get("/api/chats").status_code == 200
        out = browser.post("/api/auth/logout", headers={"Origin": server.url})
        assert out.status_code == 204
        assert f"{name}=;" in out.headers["set-cookie"] and "Max-Age=0" in out.headers["set-cookie"]
    # Someone who kept the old value (another local service that received it) is refused.
    assert _status_with_cookie(server, name, value) == 401
    # The WebSocket refuses it too.
    with server.client() as c:
        chat = c.post("/api/chats", json={"workspace": "project"}).json()
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    async def ws() -> int:
        try:
            async with connect(
                server.ws_url(chat["id"], token=False), additional_headers={"Cookie": f"{name}={value}"}
            ):
                return 101
        except InvalidStatus as e:
            return e.response.status_code

    assert asyncio.run(ws()) == 401


def test_cookie_from_one_server_is_refused_by_another(make_server: Any, tmp_path: Path) -> None:
    first = make_server()
    second = make_server(database_url=f"sqlite+aiosqlite:///{tmp_path / 'second.sqlite3'}")
    assert first.port != second.port
    name, value = _sign_in(first)
    # Replayed to the other server, under either name: refused.
    assert _status_with_cookie(second, name, value) == 401
    assert _status_with_cookie(second, cookie_name(second.port), value) == 401
    # One browser, both servers: each keeps its own cookie, both stay signed in.
    with httpx.Client(timeout=60, follow_redirects=True) as browser:
        for server in (first, second):
            code = _new_code(server)
            assert browser.get(f"{server.url}/", params={"code": code}).status_code == 200
        for server in (first, second):
            assert browser.get(f"{server.url}/api/chats").status_code == 200, server.port
        assert {c.name for c in browser.cookies.jar} == {cookie_name(first.port), cookie_name(second.port)}


def test_two_servers_on_one_port_behind_two_forwards_keep_their_sessions(make_server: Any) -> None:
    # two machines, a server on the same port on each, reached through two SSH port forwards
    # (127.0.0.1:19765 and :19766): one browser, one jar (cookies ignore ports). The cookie
    # was named after the bound port, the same on both: signing in to one signed out of the
    # other. It is named after the port in the browser's address (the Host header's)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    first = make_server(args=["--port", str(port)])
    second = make_server(args=["--host", "127.0.0.2", "--port", str(port)])
    forwards = {first: "127.0.0.1:19765", second: "127.0.0.1:19766"}
    jar: dict[str, str] = {}  # the browser's cookies for 127.0.0.1, every port

    def get(server: Server, path: str, **params: str) -> httpx.Response:
        cookie = "; ".join(f"{k}={v}" for k, v in jar.items())
        with server.anon(follow_redirects=False) as c:
            r = c.get(path, params=params, headers={"Host": forwards[server], "Cookie": cookie})
        if "set-cookie" in r.headers:
            name, value = r.headers["set-cookie"].split(";")[0].split("=", 1)
            jar[name] = value
        return r

    for server in (first, second):
        assert get(server, "/", code=server.login_code).status_code == 303
    assert sorted(jar) == [cookie_name(19765), cookie_name(19766)]
    for server in (first, second):
        assert get(server, "/api/chats").status_code == 200, forwards[server]


def _new_code(server: Server) -> str:
    """A fresh one-time code for ``server`` (its printed one may be spent): sign in with the
    token on the login endpoint, in a throwaway client, to mint one."""
    with server.client() as c:
        r = c.post("/api/auth/codes")
        assert r.status_code == 201, r.text
        body = r.json()
        assert body["url"] == f"{server.url}/?code={body['code']}"
        return str(body["code"])


def test_sessions_survive_a_restart_and_die_with_the_token(make_server: Any) -> None:
    token = "a-chosen-token-" + os.urandom(8).hex()
    first = make_server(token=token)
    _, value = _sign_in(first)
    first.stop()
    # Same database, same token: the session survives the restart.
    again = make_server(token=token)
    assert _status_with_cookie(again, cookie_name(again.port), value) == 200
    again.stop()
    # Same database, a new token: every session made with the old one is dead.
    changed = make_server(token="another-token-" + os.urandom(8).hex())
    assert _status_with_cookie(changed, cookie_name(changed.port), value) == 401
    changed.stop()
    # ...and it does not come back when the old token does (it was never deleted, only refused).
    back = make_server(token=token)
    assert _status_with_cookie(back, cookie_name(back.port), value) == 200


def test_failed_sign_ins_are_throttled(server: Server) -> None:
    name, value = _sign_in(server)
    with server.anon() as c:
        codes = [c.post("/api/auth/login", json={"token": f"wrong-{i:012d}"}).status_code for i in range(10)]
        assert codes == [401] * 10
        r = c.post("/api/auth/login", json={"token": "wrong-again-0000"})
        assert r.status_code == 429 and "too many failed sign-ins" in r.json()["detail"]
        assert int(r.headers["retry-after"]) >= 1
        assert r.headers["x-frame-options"] == "DENY"
        # While throttled no token is even compared (a guess would learn nothing) ...
        assert c.get("/api/chats", headers={"Authorization": f"token {server.token}"}).status_code == 429
        assert c.get("/api/chats", headers={"Authorization": "token wrong-wrong-wrong"}).status_code == 429
        assert c.get("/", params={"token": "wrong-wrong-wrong"}).status_code == 429
        # ... but a signed-in browser goes on working.
        assert c.get("/api/chats", headers={"Cookie": f"{name}={value}"}).status_code == 200


def test_a_session_cookie_does_not_lift_the_throttle_on_tokens(server: Server) -> None:
    # POST /api/auth/codes needs the token itself even from a signed-in browser: the wrong
    # tokens it is sent count against the throttle like any other (a replayed cookie must not
    # be a way to guess the token at full speed)
    name, value = _sign_in(server)
    with server.anon() as c:
        c.cookies.set(name, value)
        codes = [c.post("/api/auth/codes", headers={"Authorization": f"token wrong-{i:012d}"}
                        ).status_code for i in range(12)]
        assert codes[:10] == [403] * 10 and codes[10:] == [429, 429], codes
        throttled = c.post("/api/auth/codes", headers={"Authorization": f"token {server.token}"})
        assert throttled.status_code == 429 and int(throttled.headers["retry-after"]) >= 1
        assert c.get("/api/chats").status_code == 200  # the session itself goes on working


def test_short_or_odd_tokens_are_refused(tmp_path: Path) -> None:
    base = [*SERVE, "--port", "0", "--database-url", f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite3'}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURSOR_AGENT_API_")}
    cases = (
        (["--token", "fifteen-chars15"], {}),
        ([], {"CURSOR_AGENT_API_TOKEN": "short"}),
        (["--token", "has a space in it!"], {}),
        (["--token", "x" * 15], {}),
    )
    # the four commands at once: each is mostly Python starting up
    procs = [
        subprocess.Popen([*base, *args], env={**env, **extra}, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for args, extra in cases
    ]
    try:
        outputs = [proc.communicate(timeout=60) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    for proc, (stdout, stderr) in zip(procs, outputs, strict=True):
        assert proc.returncode == 2, stderr
        assert "token" in stderr and "Traceback" not in stderr
        assert stdout == "", "nothing served"
    assert "at least 16 characters" in outputs[-1][1]


def test_validation_errors_never_echo_the_body(server: Server) -> None:
    import orjson

    # (the sign-in takes 16 KiB at most, PUBLIC_BODY_BYTES: its cases fit in that; the
    # megabyte of unknown keys is a signed-in client's)
    with server.anon() as c:
        # unknown keys: one error per key, each naming the key, five at most told
        body = orjson.dumps({"token": "x" * 20, **{f"key{i:05d}" + "k" * 40: 1 for i in range(300)}})
        assert 10_000 < len(body) < 16_384
        r = c.post("/api/auth/login", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 422
        assert len(r.content) < 4096, len(r.content)
        assert r.json()["detail"].startswith("invalid request:")
        # One huge value: the answer names the field, not the value.
        secret = "s3cret-" * 2_000
        r = c.post("/api/auth/login", json={"token": secret})
        assert r.status_code == 422 and "s3cret" not in r.text and len(r.content) < 4096
    with server.client() as c:
        body = orjson.dumps({"workspace": "project",
                             **{f"key{i:07d}" + "k" * 40: 1 for i in range(19_000)}})
        assert len(body) > 900_000
        r = c.post("/api/chats", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 422
        assert len(r.content) < 4096, len(r.content)
        assert r.json()["detail"].startswith("invalid request:")
        r = c.post("/api/chats", json={"workspace": "project", "model": "m" + "x y" * 50_000})
        assert r.status_code == 422 and "x y" not in r.text and len(r.content) < 4096


def test_sessions_expire_sliding_and_at_most_after_the_cap(tmp_path: Path) -> None:
    now = [1_800_000_000.0]
    day = 86_400.0
    settings = ServerSettings(
        token="t" * 16,
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite3'}",
        session_idle_seconds=2 * day,
        session_max_seconds=5 * day,
    )

    async def scenario() -> list[bool]:
        store = Store(settings.database_url)
        await store.start()
        try:
            auth = Auth(settings, store, clock=lambda: now[0])
            sid = await auth.create_session()
            seen = []
            for step in (1.5, 1.5, 1.5):  # each use inside the idle window slides it
                now[0] += step * day
                seen.append(await auth.check_session(sid))
            now[0] += 0.6 * day  # 5.1 days after sign-in: past the cap
            seen.append(await auth.check_session(sid))
            idle = await auth.create_session()
            now[0] += 2.1 * day  # unused for longer than the idle window
            seen.append(await auth.check_session(idle))
            other = Auth(ServerSettings(token="u" * 16, database_url=settings.database_url), store)
            fresh = await auth.create_session()
            seen.append(await other.check_session(fresh))  # another token
            seen.append(await auth.check_session(fresh))
            await auth.revoke_session(fresh)
            seen.append(await auth.check_session(fresh))
            return seen
        finally:
            await store.close()

    assert asyncio.run(scenario()) == [True, True, True, False, False, False, True, False]


def test_serve_socket_disables_nagle() -> None:
    """The keep-alive latency fix: TCP_NODELAY on the listening socket and on what it accepts.

    asyncio sets TCP_NODELAY on accepted connections only when the socket's protocol is
    IPPROTO_TCP; a socket made with protocol 0 (as `serve` did) was left with Nagle on.
    """
    sock = listen_socket("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        client = socket.create_connection(sock.getsockname())
        conn, _ = sock.accept()
        try:
            assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        finally:
            conn.close()
            client.close()
    finally:
        sock.close()


@pytest.mark.parametrize("where", ["header", "query"])
def test_openapi_with_a_token(server: Server, where: str) -> None:
    with server.anon(follow_redirects=False) as c:
        if where == "header":
            r = c.get("/openapi.json", headers={"Authorization": f"token {server.token}"})
            assert r.status_code == 200, r.text
            description = r.json()["info"]["description"]
            assert "/api/chats/{chat_id}/stream" in description and "WebSocket" in description
            assert "set-cookie" not in r.headers
        else:
            # A browser link with the token: swapped for a session, the token taken out of the URL.
            r = c.get("/openapi.json", params={"token": server.token})
            assert r.status_code == 303 and r.headers["location"] == "/openapi.json"
            assert c.get("/openapi.json").status_code == 200


def test_a_minted_link_names_the_address_the_client_used(make_inproc: Any) -> None:
    # POST /api/auth/codes answered a url on the bound address: through an SSH forward
    # (Host 127.0.0.1:19765) or an --allow-host name the link named another server, or none
    server = make_inproc(allowed_hosts=("agent.lan",))
    bound = server.settings.base_url.removeprefix("http://")
    with server.client() as c:
        for host, origin in (("127.0.0.1:19765", "127.0.0.1:19765"), ("[::1]:19765", "[::1]:19765"),
                             ("LOCALHOST:19765", "localhost:19765"),
                             # another name may be a proxy's that speaks https (review 45): an
                             # http link would send the code in clear; the bound address
                             ("agent.lan:8080", bound), ("AGENT.lan", bound),
                             # not a plain host[:port] (it passes the Host check by its name):
                             # the bound address, not a link to another host
                             ("agent.lan:1@evil.example", bound), ("agent.lan:99999", bound)):
            r = c.post("/api/auth/codes", headers={"Host": host})
            assert r.status_code == 201, (host, r.text)
            assert r.json()["url"] == f"http://{origin}/?code={r.json()['code']}", (host, r.json())


def test_a_minted_link_names_only_a_host_the_check_let_in(make_inproc: Any) -> None:
    """Two Host headers: the Host check reads the last, and the link read the first, so it
    named a host the check never let in (review 45). With more than one, the bound address."""
    import json
    import socket

    server = make_inproc()
    port = int(server.url.rsplit(":", 1)[1])
    req = (f"POST /api/auth/codes HTTP/1.1\r\nHost: evil.example:80\r\nHost: 127.0.0.1:{port}\r\n"
           f"Authorization: token {server.token}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(req.encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert b" 201 " in head.split(b"\r\n")[0], data[:300]
    assert json.loads(body)["url"].startswith(server.settings.base_url + "/?code="), body
