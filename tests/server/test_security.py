"""Local-first security: token or cookie everywhere, Host allowlist, Origin, workspace roots."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import Server, new_chat, wait_run
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus


def _ws_status(url: str, **kwargs: Any) -> int:
    async def go() -> int:
        try:
            async with connect(url, **kwargs):
                return 101
        except InvalidStatus as e:
            return e.response.status_code

    return asyncio.run(go())


def test_binds_loopback_and_prints_the_url_once(server: Server) -> None:
    assert server.url.startswith("http://127.0.0.1:")
    opens = [line for line in server.first_lines if line.startswith("Open: ")]
    assert opens == [f"Open: {server.url}/?code={server.login_code}"]
    assert len(server.login_code) >= 32
    assert server.token not in "\n".join(server.first_lines), "a token given by --token is not echoed"
    server.stop()
    assert server.token not in server.log_text(), "the token is printed once, never logged"


def test_every_api_call_needs_the_token(server: Server) -> None:
    with server.client() as c:
        chat = new_chat(c)
    with server.anon() as anon:
        for method, path in [
            ("GET", "/api/health"),
            ("GET", "/api/chats"),
            ("POST", "/api/chats"),
            ("GET", f"/api/chats/{chat['id']}/events"),
            ("GET", "/openapi.json"),
            ("GET", "/docs"),
            ("POST", f"/api/chats/{chat['id']}/runs"),
        ]:
            r = anon.request(method, path, json={"prompt": "x"})
            assert r.status_code == 401, (method, path, r.status_code)
            assert "authentication required" in r.json()["detail"]
        wrong = anon.get("/api/chats", headers={"Authorization": "token nope"})
        assert wrong.status_code == 401 and "invalid token" in wrong.json()["detail"]
        assert anon.get("/api/chats", params={"token": "nope"}).status_code == 401
        assert anon.get("/api/chats", params={"token": server.token}).status_code == 200
        bearer = anon.get("/api/chats", headers={"Authorization": f"Bearer {server.token}"})
        assert bearer.status_code == 200
    # Nothing was created by the refused POSTs.
    with server.client() as c:
        assert len(c.get("/api/chats").json()["chats"]) == 1
        assert c.get(f"/api/chats/{chat['id']}").json()["last_seq"] == 0
    assert _ws_status(server.ws_url(chat["id"], token=False)) == 401
    bad = server.ws_url(chat["id"], token=False) + "&token=wrong"
    assert _ws_status(bad) == 401


def test_token_is_exchanged_for_a_strict_httponly_cookie(server: Server) -> None:
    with server.anon(follow_redirects=False) as browser:
        r = browser.get("/", params={"token": server.token})
        assert r.status_code == 303 and r.headers["location"] == "/"
        cookie = r.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert server.token not in cookie, "the cookie is not the token itself"
        name, value = cookie.split(";")[0].split("=", 1)
        assert name == f"cursor_agent_api_session_{server.port}"
        # The cookie alone now opens the API and the WebSocket.
        assert browser.get("/api/chats").status_code == 200
        chat = browser.post("/api/chats", json={"workspace": "project"}, headers={"Origin": server.url})
        assert chat.status_code == 201
        assert (
            _ws_status(
                server.ws_url(chat.json()["id"], token=False),
                additional_headers={"Cookie": f"{name}={value}"},
                origin=server.url,
            )
            == 101
        )
        # Logging out forgets it.
        out = browser.post("/api/auth/logout", headers={"Origin": server.url})
        assert out.status_code == 204
        assert browser.get("/api/chats").status_code == 401
        # The login endpoint sets it too, only for the right token.
        assert browser.post("/api/auth/login", json={"token": "nope"}).status_code == 401
        assert browser.post("/api/auth/login", json={"token": server.token}).status_code == 204
        assert browser.get("/api/chats").status_code == 200
        # A made-up session id is refused (the jar cleared first: with two cookies of one
        # name, which one a request carries first depends on the client and framework versions).
        browser.cookies.clear()
        browser.cookies.set(name, "0" * 43)
        assert browser.get("/api/chats").status_code == 401
        # ?token= on an /api path authenticates that request only: no cookie, no session.
        browser.cookies.clear()
        api = browser.get("/api/chats", params={"token": server.token})
        assert api.status_code == 200 and "set-cookie" not in api.headers


def test_foreign_host_is_refused(server: Server) -> None:
    with server.client() as c:
        chat = new_chat(c)
        for host in ("evil.example", "attacker.test:1234", f"127.0.0.1.nip.io:{server.port}"):
            r = c.get("/api/chats", headers={"Host": host})
            assert r.status_code == 403 and "not allowed" in r.json()["detail"], host
        for host in (f"localhost:{server.port}", f"127.0.0.1:{server.port}"):
            assert c.get("/api/chats", headers={"Host": host}).status_code == 200
    assert _ws_status(server.ws_url(chat["id"]), additional_headers={"Host": "evil.example"}) == 403


def test_foreign_origin_is_refused(server: Server) -> None:
    with server.client() as c:
        chat = new_chat(c)
        for origin in ("http://evil.example", "null", f"http://localhost:{server.port + 1}"):
            r = c.post("/api/chats", json={"workspace": "project"}, headers={"Origin": origin})
            assert r.status_code == 403 and "Origin" in r.json()["detail"], origin
            r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"}, headers={"Origin": origin})
            assert r.status_code == 403
        # A GET from a foreign page gets no CORS header, so the page cannot read it.
        r = c.get("/api/chats", headers={"Origin": "http://evil.example"})
        assert "access-control-allow-origin" not in r.headers
        assert c.get(f"/api/chats/{chat['id']}/runs").json()["runs"] == []
        assert len(c.get("/api/chats").json()["chats"]) == 1
        same = c.post("/api/chats", json={"workspace": "project"}, headers={"Origin": server.url})
        assert same.status_code == 201
    assert _ws_status(server.ws_url(chat["id"]), origin="http://evil.example") == 403
    assert _ws_status(server.ws_url(chat["id"]), origin=server.url) == 101


def test_allowed_origin_and_host_options(make_server: Any) -> None:
    server = make_server(args=["--allow-origin", "http://ui.test:9000", "--allow-host", "agents.internal"])
    with server.client() as c:
        r = c.post("/api/chats", json={"workspace": "project"}, headers={"Origin": "http://ui.test:9000"})
        assert r.status_code == 201
        assert c.get("/api/chats", headers={"Host": "agents.internal"}).status_code == 200


def test_workspace_must_stay_under_the_roots(server: Server, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (server.root / "escape").symlink_to(outside)
    (server.root / "project" / "up").symlink_to("../..")
    with server.client() as c:
        for ws in (
            str(outside),
            "..",
            "project/../..",
            "escape",
            "escape/",
            "project/up",
            "/",
            "/etc",
            str(server.root / ".." / "outside"),
        ):
            r = c.post("/api/chats", json={"workspace": ws})
            assert r.status_code == 403, (ws, r.text)
            assert "outside the allowed roots" in r.json()["detail"]
        missing = c.post("/api/chats", json={"workspace": "project/nope"})
        assert missing.status_code == 400 and "does not exist" in missing.json()["detail"]
        (server.root / "file.txt").write_text("x")
        not_dir = c.post("/api/chats", json={"workspace": "file.txt"})
        assert not_dir.status_code == 400 and "not a directory" in not_dir.json()["detail"]
        assert c.get("/api/chats").json()["chats"] == []
        inside = c.post("/api/chats", json={"workspace": str(server.root / "project" / ".")})
        assert inside.status_code == 201
        assert inside.json()["workspace"] == str(server.root / "project")
        cfg = c.get("/api/config").json()
        assert cfg["roots"] == [str(server.root)]


def test_a_workspace_whose_real_path_is_not_utf8_is_refused(server: Server) -> None:
    """A path the database cannot hold (not UTF-8, here through a symlink): 400, stored nowhere."""
    project = bytes(server.root / "project")
    os.mkdir(project + b"/\xff-dir")
    os.symlink(b"\xff-dir", project + b"/lnk")
    with server.client() as c:
        r = c.post("/api/chats", json={"workspace": "project/lnk"})
        assert r.status_code == 400, r.text
        assert "not valid UTF-8" in r.json()["detail"]
        assert "give a path through" not in r.json()["detail"], "a UTF-8 symlink resolves to the same path"
        # The bytes named directly, surrogate-escaped in JSON: not a valid string (422).
        r = c.post("/api/chats", content=b'{"workspace": "project/\\udcff-dir"}',
                   headers={"content-type": "application/json"})
        assert r.status_code == 422 and "unicode" in r.json()["detail"], r.text
        assert c.get("/api/chats").json()["chats"] == []


def test_a_workspace_naming_a_users_home_is_refused_alike(server: Server) -> None:
    """``~user`` is not expanded: the same 400 for a user who exists and one who does not
    (no traceback, nothing told about the machine's users); ``~`` is the server's home."""
    with server.client() as c:
        answers = []
        for ws in ("~root", "~nosuchuser_xyz", "~nosuchuser_xyz/project"):
            r = c.post("/api/chats", json={"workspace": ws})
            assert r.status_code == 400, (ws, r.text)
            assert r.headers["content-type"] == "application/json"
            answers.append(r.json()["detail"].replace(ws, "WS"))
        assert len(set(answers)) == 1, answers
        assert "~user" in answers[0]
        home = c.post("/api/chats", json={"workspace": "~"})
        assert home.status_code == 403 and "outside the allowed roots" in home.json()["detail"]


def _database_dump(db_url: str) -> bytes:
    """Every byte the database holds for our tables (SQLite files, or PostgreSQL rows)."""
    if db_url.startswith("sqlite"):
        path = Path(db_url.split(":///", 1)[1])
        return b"".join(f.read_bytes() for f in path.parent.glob(path.name + "*"))
    import asyncpg  # type: ignore[import-untyped]
    from sqlalchemy.engine import make_url

    dsn = make_url(db_url).set(drivername="postgresql").render_as_string(hide_password=False)

    async def dump() -> bytes:
        conn = await asyncpg.connect(dsn)
        try:
            out = b""
            for table in ("chats", "runs", "events", "tool_calls"):
                # the agent's lines are bytes (bytea): their text, not their hex
                row = "t::text || coalesce(encode(t.raw, 'escape'), '')" if table == "events" else "t::text"
                text = await conn.fetchval(f"SELECT coalesce(string_agg({row}, ''), '') FROM {table} t")
                out += text.encode()
            return out
        finally:
            await conn.close()

    return asyncio.run(dump())


def test_api_key_is_never_stored_nor_logged(
    make_server: Any, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "key-" + "s3cr3t" * 6
    monkeypatch.setenv("CURSOR_API_KEY", secret)
    server = make_server(args=["--log-level", "debug"])
    with server.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hello"}).json()
        final = wait_run(c, run["id"])
        assert final["status"] == "succeeded"
        events = c.get(f"/api/chats/{chat['id']}/events", params={"include_raw": True}).json()
        init = next(e for e in events["events"] if e["type"] == "system:init")
        assert init["payload"]["data"]["apiKeySource"] == "env", "the agent got the key"
    server.stop()
    dump = _database_dump(db_url)
    assert b"apiKeySource" in dump, "the dump holds the stored events"
    assert secret.encode() not in dump
    assert secret not in server.log_text()


def test_access_log_redacts_the_token(make_server: Any) -> None:
    server = make_server(args=["--log-level", "info", "--access-log"])
    with httpx.Client(base_url=server.url) as c:
        assert c.get("/api/health", params={"token": server.token}).status_code == 200
        # A name the server URL-decodes to `token` authenticates too, and is redacted too.
        assert c.get(f"/api/health?tok%65n={server.token}").status_code == 200
        assert c.get(f"/api/config?a=1&TOK%2545N={server.token}").status_code == 401
        assert c.get("/", params={"code": server.login_code}).status_code == 303
    server.stop()
    log = server.log_text()
    assert "/api/health?token=[redacted]" in log
    assert "/api/health?tok%65n=[redacted]" in log
    assert "/?code=[redacted]" in log
    assert server.token not in log
    assert server.login_code not in log



def test_a_debug_log_shows_no_header_secret(make_server: Any) -> None:
    # --log-level debug: the websockets library dumps each handshake's headers
    # ("< authorization: token …", "< cookie: cursor_agent_api_session_…=…") through uvicorn's
    # logger; the token and a live session's cookie were in the log
    import websockets.sync.client

    server = make_server(args=["--log-level", "debug"])
    with server.client() as c:
        chat = new_chat(c)
    with httpx.Client(base_url=server.url) as c:
        r = c.get("/", params={"code": server.login_code})
        assert r.status_code == 303
        cookie = r.headers["set-cookie"].split(";")[0]
    url = server.url.replace("http", "ws", 1) + f"/api/chats/{chat['id']}/stream"
    for headers in ({"Cookie": cookie}, {"Authorization": f"token {server.token}"}):
        with websockets.sync.client.connect(url, additional_headers=headers,
                                            origin=server.url) as ws:  # type: ignore[arg-type]
            assert '"hello"' in str(ws.recv(timeout=30))  # the socket was opened
    server.stop()
    log = server.log_text()
    assert "< authorization: [redacted]" in log.lower()  # (the headers are logged)
    assert server.token not in log
    assert cookie.split("=", 1)[1] not in log


def test_the_access_log_names_the_real_client_not_a_forwarded_one(make_server: Any) -> None:
    # uvicorn trusted X-Forwarded-For from 127.0.0.1 (its proxy_headers default): any local
    # process wrote the client address of its choice in the access log
    server = make_server(args=["--log-level", "info", "--access-log"])
    with httpx.Client(base_url=server.url) as c:
        r = c.get("/api/health?probe=forged", headers={"Authorization": f"token {server.token}",
                                                       "X-Forwarded-For": "203.0.113.66"})
        assert r.status_code == 200
    server.stop()
    (line,) = [x for x in server.log_text().splitlines() if "probe=forged" in x]
    assert "203.0.113.66" not in line and "127.0.0.1:" in line, line


def test_the_access_log_keeps_a_line_whose_client_looks_like_a_header(make_server: Any) -> None:
    # uvicorn took the client address from X-Forwarded-For (trusted from 127.0.0.1, before
    # serve turned that off: above): one that read like a header line ("cookie: x") made the
    # header redaction flatten the access record's args, and uvicorn's formatter failed
    # ("--- Logging error ---"): the line was lost
    server = make_server(args=["--log-level", "info", "--access-log"])
    with httpx.Client(base_url=server.url) as c:
        r = c.get("/api/health?probe=1", headers={"Authorization": f"token {server.token}",
                                                  "X-Forwarded-For": "cookie: x"})
        assert r.status_code == 200
    server.stop()
    log = server.log_text()
    assert "Logging error" not in log, log
    assert "/api/health?probe=1" in log

@pytest.mark.parametrize("value", ["ab'cdef0123456789XYZ", 'ab"cdef0123456789XYZ',
                                   "ab;cdef0123456789XYZ"])
def test_a_secret_with_a_quote_is_redacted_whole(value: str) -> None:
    # a token may hold quotes (printable ASCII); a raw one in a request line reaches the log
    from cursor_agent_api.server.redaction import redact

    for line in (f"GET /api/config?token={value} HTTP/1.1", f"/?a=1&code={value}#x"):
        shown = redact(line)
        assert "cdef0123456789XYZ" not in shown and "[redacted]" in shown, shown


def test_pages_carry_a_strict_content_security_policy(server: Server) -> None:
    with server.anon(follow_redirects=False) as browser:
        r = browser.get("/", params={"token": server.token})
        page = browser.get("/")
        assert page.status_code == 200
        csps = set()
        for resp in (r, page, browser.get("/api/health"), browser.get("/js/app.js")):
            csp = resp.headers["content-security-policy"]
            csps.add(csp)
            assert "script-src 'self'" in csp and "unsafe-inline" not in csp
            assert "connect-src 'self';" in csp
            assert "ws:" not in csp and "wss:" not in csp and "*" not in csp
            assert resp.headers["x-content-type-options"] == "nosniff"
            assert resp.headers["x-frame-options"] == "DENY"
            assert "access-control-allow-origin" not in resp.headers
        assert len(csps) == 1, "one CSP for pages, files and the API"
        assert browser.get("/api/health").headers["cache-control"] == "no-store"


def test_a_refused_websocket_is_not_logged_as_an_error(make_server: Any) -> None:
    # every WebSocket refused with its HTTP answer (401 no sign-in, 403 a foreign Origin) made
    # uvicorn log "ERROR: ASGI callable returned without completing handshake." (its
    # websockets-sansio forgets that the answer ended the handshake): a routine refusal is not
    # an error, and whoever alerts on ERROR lines was paged for each
    import websockets.sync.client

    server = make_server(args=["--log-level", "info"])
    with server.client() as c:
        chat = new_chat(c)
    url = server.url.replace("http", "ws", 1) + f"/api/chats/{chat['id']}/stream"
    for headers, status in (({}, 401), ({"Origin": "http://evil.example",
                                         "Authorization": f"token {server.token}"}, 403)):
        with pytest.raises(InvalidStatus) as refused:
            websockets.sync.client.connect(url, additional_headers=headers)  # type: ignore[arg-type]
        assert refused.value.response.status_code == status
    server.stop()
    log = server.log_text()
    assert '"WebSocket /api/chats/' in log  # (the refusals are logged, at INFO)
    assert "without completing handshake" not in log, log


@pytest.mark.parametrize("name", ["token;", "token%00", "TOKEN%0A", "tok%09en", "x;token", "code%3B"])
def test_a_secret_under_a_name_with_separators_or_controls_is_redacted(name: str) -> None:
    # `?token;=T` and `?token%00=T` (401: the server does not take them) were written to the
    # access log in clear: the name was cut at ";", or decoded to "token\x00", not "token"
    from cursor_agent_api.server.redaction import redact

    shown = redact(f"GET /api/chats?{name}=cdef0123456789XYZ HTTP/1.1")
    assert "cdef0123456789XYZ" not in shown and "[redacted]" in shown, shown
