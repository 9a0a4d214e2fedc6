"""The request checks of ``server/checks/``, one at a time, in this process.

Each check wraps a tiny ASGI app that records whether the request reached it; the
requests are plain ASGI scopes, so each behaviour is tested without a server. The same
behaviours are tested over HTTP, all checks together, in ``test_security.py`` and
``test_auth.py``; ``test_the_checks_are_composed_outermost_first`` pins their order.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from cursor_agent_api.server.auth import Auth
from cursor_agent_api.server.checks.asgi import ASGIApp, Message, Scope
from cursor_agent_api.server.checks.authentication import Authentication
from cursor_agent_api.server.checks.body_size import BodySizeLimit, BodyTooLargeError
from cursor_agent_api.server.checks.headers import CONTENT_SECURITY_POLICY, SecurityHeaders
from cursor_agent_api.server.checks.host import HostCheck
from cursor_agent_api.server.checks.origin import OriginCheck
from cursor_agent_api.server.security import SecurityMiddleware, checks_in_order
from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.store import Store

TOKEN = "t" * 32


class Reached:
    """The app behind a check: answers 200 with the body it read, and remembers the scope."""

    def __init__(self) -> None:
        self.scopes: list[Scope] = []

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]], send: Any) -> None:
        self.scopes.append(scope)
        if scope["type"] != "http":
            await send({"type": "websocket.accept"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})


class Answer:
    """What a check sent back."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages

    @property
    def status(self) -> int:
        start = self.messages[0]
        if start["type"] == "websocket.accept":
            return 101
        if start["type"] == "websocket.close":
            return 1008
        return int(start["status"])

    @property
    def headers(self) -> dict[bytes, bytes]:
        return dict(self.messages[0].get("headers", []))

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages[1:])

    @property
    def detail(self) -> str:
        return str(orjson.loads(self.body)["detail"])

    @property
    def code(self) -> str:
        return str(orjson.loads(self.body)["code"])


def request(
    app: ASGIApp,
    path: str = "/",
    *,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    query: str = "",
    body: list[bytes] | None = None,
    websocket: bool = False,
    extensions: dict[str, Any] | None = None,
    loop: asyncio.AbstractEventLoop | None = None,
) -> Answer:
    """Send one request (a WebSocket upgrade if ``websocket``) through ``app``."""
    raw = [(k.lower().encode(), v.encode()) for k, v in {"host": "127.0.0.1:8765", **(headers or {})}.items()]
    scope: Scope = {
        "type": "websocket" if websocket else "http",
        "path": path,
        "query_string": query.encode(),
        "headers": raw,
    }
    if not websocket:
        scope["method"] = method
    if extensions is not None:
        scope["extensions"] = extensions
    chunks = list(body or [b""])
    sent: list[Message] = []

    async def receive() -> Message:
        if websocket:
            return {"type": "websocket.connect"}
        if chunks:
            chunk = chunks.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    if loop is None:
        asyncio.run(app(scope, receive, send))
    else:  # the loop the store was opened on (its connections belong to it)
        loop.run_until_complete(app(scope, receive, send))
    return Answer(sent)


# --- headers -------------------------------------------------------------------------------


def test_headers_are_added_to_every_answer() -> None:
    answer = request(SecurityHeaders(Reached()), "/index.html")
    assert answer.headers[b"content-security-policy"] == CONTENT_SECURITY_POLICY.encode()
    assert answer.headers[b"x-content-type-options"] == b"nosniff"
    assert answer.headers[b"referrer-policy"] == b"no-referrer"
    assert answer.headers[b"x-frame-options"] == b"DENY"
    assert b"cache-control" not in answer.headers
    assert not any(name.startswith(b"access-control-") for name in answer.headers)


def test_api_answers_are_not_stored() -> None:
    assert request(SecurityHeaders(Reached()), "/api/chats").headers[b"cache-control"] == b"no-store"


def test_an_answer_keeps_its_own_value_of_a_header() -> None:
    async def framed(scope: Scope, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"x-frame-options", b"SAMEORIGIN")]})
        await send({"type": "http.response.body", "body": b""})

    answer = request(SecurityHeaders(framed))
    assert [v for k, v in answer.messages[0]["headers"] if k == b"x-frame-options"] == [b"SAMEORIGIN"]


def test_an_app_that_raises_gets_a_500_with_the_headers_and_the_error_goes_on() -> None:
    async def broken(scope: Scope, receive: Any, send: Any) -> None:
        raise RuntimeError("boom")

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "path": "/api/x", "method": "GET", "headers": []}
    with pytest.raises(RuntimeError, match="boom"):  # still logged by whoever is outside
        asyncio.run(SecurityHeaders(broken)(scope, None, send))  # type: ignore[arg-type]
    answer = Answer(sent)
    assert answer.status == 500 and orjson.loads(answer.body)["code"] == "internal_error"
    assert answer.headers[b"content-type"] == b"application/json"
    assert answer.headers[b"content-security-policy"] == CONTENT_SECURITY_POLICY.encode()
    assert answer.headers[b"cache-control"] == b"no-store"


def test_an_app_that_raises_after_answering_is_not_answered_twice() -> None:
    async def late(scope: Scope, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise RuntimeError("late")

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    with pytest.raises(RuntimeError):
        asyncio.run(SecurityHeaders(late)({"type": "http", "path": "/", "headers": []}, None, send))  # type: ignore[arg-type]
    assert [m["type"] for m in sent] == ["http.response.start"]


# --- Host ----------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "localhost", "[::1]:9", "LOCALHOST:1", "box.lan"])
def test_allowed_hosts_pass(host: str) -> None:
    app = Reached()
    assert request(HostCheck(app, {"127.0.0.1", "localhost", "::1", "box.lan"}),
                   headers={"host": host}).status == 200
    assert len(app.scopes) == 1


@pytest.mark.parametrize("websocket", [False, True])
@pytest.mark.parametrize("host", ["evil.example", "evil.example:8765", "127.0.0.1.evil.example", ""])
def test_other_hosts_are_refused(host: str, websocket: bool) -> None:
    app = Reached()
    answer = request(HostCheck(app, {"127.0.0.1", "localhost"}), headers={"host": host},
                     websocket=websocket, extensions={"websocket.http.response": {}})
    assert answer.status == 403 and "DNS rebinding" in answer.detail
    assert app.scopes == []


def test_a_websocket_without_the_http_response_extension_is_closed() -> None:
    answer = request(HostCheck(Reached(), {"127.0.0.1"}), headers={"host": "evil.example"},
                     websocket=True)
    assert answer.status == 1008 and "is not allowed" in answer.messages[0]["reason"]


def test_lifespan_passes_every_check(tmp_path: Path) -> None:
    seen: list[str] = []

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        seen.append(scope["type"])

    middleware = SecurityMiddleware(app, ServerSettings(token=TOKEN), auth=None)  # type: ignore[arg-type]
    asyncio.run(middleware({"type": "lifespan"}, None, None))  # type: ignore[arg-type]
    assert seen == ["lifespan"]


# --- Origin --------------------------------------------------------------------------------


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://127.0.0.1:9999",
                                    "file://", "https://localhost:8765"])
def test_foreign_origins_are_refused_on_changes_and_websockets(origin: str) -> None:
    check = OriginCheck(Reached(), ())
    answer = request(check, method="POST", headers={"origin": origin})
    assert answer.status == 403 and answer.detail.startswith(f"Origin {origin!r} is not allowed")
    # behind a proxy that rewrites Host, the page's own origin is foreign: the 403 names the fix
    assert answer.detail.endswith("start the server with --allow-origin <origin>")
    assert request(check, headers={"origin": origin}, websocket=True,
                   extensions={"websocket.http.response": {}}).status == 403


@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS"])
def test_safe_methods_are_not_checked(method: str) -> None:
    assert request(OriginCheck(Reached(), ()), method=method,
                   headers={"origin": "http://evil.example"}).status == 200


def test_own_and_allowed_origins_and_none_pass() -> None:
    check = OriginCheck(Reached(), ("https://App.example/",))
    for headers in ({"origin": "http://127.0.0.1:8765"}, {"origin": "https://127.0.0.1:8765/"},
                    {"origin": "https://app.example"}, {}):
        assert request(check, method="POST", headers=headers).status == 200, headers
    assert request(check, headers={"origin": "http://127.0.0.1:8765"}, websocket=True).status == 101


# --- body size -----------------------------------------------------------------------------


def test_a_declared_length_over_the_limit_is_413_before_reading() -> None:
    app = Reached()
    answer = request(BodySizeLimit(app, 10), method="POST", headers={"content-length": "11"},
                     body=[b"x" * 11])
    assert answer.status == 413 and answer.detail == "request body larger than 10 bytes"
    assert app.scopes == []


def test_an_invalid_length_is_400() -> None:
    answer = request(BodySizeLimit(Reached(), 10), method="POST", headers={"content-length": "-1"})
    assert answer.status == 400 and answer.detail == "invalid Content-Length"


def test_a_body_longer_than_declared_raises_while_the_app_reads_it() -> None:
    with pytest.raises(BodyTooLargeError, match="larger than 10 bytes"):
        request(BodySizeLimit(Reached(), 10), method="POST", headers={"content-length": "5"},
                body=[b"x" * 6, b"y" * 6])


def test_a_chunked_body_is_read_bounded_first() -> None:
    app = Reached()
    over = request(BodySizeLimit(app, 10), method="POST", body=[b"x" * 6, b"y" * 6])
    assert over.status == 413 and app.scopes == []
    within = request(BodySizeLimit(app, 10), method="POST", body=[b"x" * 5, b"y" * 5])
    assert within.status == 200 and within.body == b"x" * 5 + b"y" * 5


def test_bodies_within_the_limit_reach_the_app() -> None:
    answer = request(BodySizeLimit(Reached(), 10), method="PUT", headers={"content-length": "10"},
                     body=[b"x" * 10])
    assert answer.status == 200 and answer.body == b"x" * 10


# --- authentication ------------------------------------------------------------------------


@pytest.fixture
def auth(tmp_path: Path) -> Iterator[Auth]:
    """An :class:`Auth` on a fresh SQLite store; its loop is ``auth.loop`` (pass it to ``request``)."""
    loop = asyncio.new_event_loop()
    store = Store(f"sqlite+aiosqlite:///{tmp_path / 'auth.sqlite3'}")
    loop.run_until_complete(store.start())
    auth = Auth(ServerSettings(token=TOKEN, login_failure_burst=2), store)
    auth.loop = loop  # type: ignore[attr-defined]
    yield auth
    loop.run_until_complete(store.close())
    loop.close()


def authenticated(auth: Auth) -> Callable[..., Answer]:
    """``request`` through :class:`Authentication` in front of a :class:`Reached`, on the store's loop."""
    app = Reached()

    def send(path: str = "/", **kwargs: Any) -> Answer:
        return request(Authentication(app, auth), path, loop=auth.loop, **kwargs)  # type: ignore[attr-defined]

    send.app = app  # type: ignore[attr-defined]
    return send


@pytest.mark.parametrize("path", ["/api/chats", "/openapi.json", "/docs", "/redoc"])
def test_protected_paths_need_the_token(auth: Auth, path: str) -> None:
    send = authenticated(auth)
    refused = send(path)
    assert refused.status == 401 and refused.headers[b"www-authenticate"] == b"token"
    assert refused.detail.startswith("authentication required")
    assert send(path, headers={"authorization": f"token {TOKEN}"}).status == 200
    assert send(path, headers={"authorization": f"Bearer {TOKEN}"}).status == 200
    assert len(send.app.scopes) == 2  # type: ignore[attr-defined]
    # ?token= authenticates an /api request; elsewhere it is a sign-in link (see below)
    assert send(path, query=f"token={TOKEN}").status == (200 if path.startswith("/api") else 303)


@pytest.mark.parametrize("path", ["/", "/app.js", "/api/auth/login", "/api/auth/logout"])
def test_public_paths_pass_without_a_token(auth: Auth, path: str) -> None:
    assert authenticated(auth)(path, method="POST").status == 200


def test_wrong_tokens_are_401_then_throttled_429(auth: Auth) -> None:
    send = authenticated(auth)
    wrong = {"authorization": "token " + "w" * 32}
    assert [send("/api/chats", headers=wrong).status for _ in range(2)] == [401, 401]
    throttled = send("/api/chats", headers=wrong)
    assert throttled.status == 429 and int(throttled.headers[b"retry-after"]) >= 1
    # while throttled, even the right token waits (no guessing during the hold)
    assert send("/api/chats", headers={"authorization": f"token {TOKEN}"}).status == 429


def test_a_sign_in_link_becomes_a_session_cookie_and_leaves_the_url(auth: Auth) -> None:
    send = authenticated(auth)
    answer = send("/", query=f"chat=abc&token={TOKEN}")
    assert answer.status == 303 and answer.headers[b"location"] == b"/?chat=abc"
    cookie = answer.headers[b"set-cookie"].decode()
    assert cookie.startswith(f"{auth.cookie_name_for('127.0.0.1:8765')}=") and "HttpOnly" in cookie
    sid = cookie.split(";", 1)[0]
    assert send("/api/chats", headers={"cookie": sid}).status == 200
    code = auth.issue_code()
    by_code = send("/", query=f"code={code}")
    assert by_code.status == 303 and b"set-cookie" in by_code.headers
    again = send("/", query=f"code={code}")  # one time only
    assert again.status == 303 and again.headers[b"location"] == b"/?signin=refused"
    assert b"set-cookie" not in again.headers


@pytest.mark.parametrize("path, location", [
    ("//evil.example/login", b"/evil.example/login"),  # (the decoded path of /%2F%2Fevil...)
    ("/\\evil.example", b"/evil.example"),
    ("///evil.example", b"/evil.example"),
    ("/\u20ac/x y", b"/%E2%82%AC/x%20y"),  # not latin-1: it was a 500 after the code was spent
])
def test_the_sign_in_redirect_stays_on_this_server(auth: Auth, path: str, location: bytes) -> None:
    # a link to http://127.0.0.1:8765//evil.example/?code=... must not send the browser to
    # evil.example (a look-alike sign-in page), with a good code or a bad one
    send = authenticated(auth)
    refused = send(path, query="code=junk")
    assert refused.status == 303
    assert refused.headers[b"location"] == location + b"?signin=refused"
    signed_in = send(path, query=f"code={auth.issue_code()}")
    assert signed_in.status == 303 and signed_in.headers[b"location"] == location
    assert b"set-cookie" in signed_in.headers


def test_a_websocket_needs_the_token_too(auth: Auth) -> None:
    send = authenticated(auth)
    assert send("/api/chats/x/stream", websocket=True).status == 1008
    assert send("/api/chats/x/stream", websocket=True, query=f"token={TOKEN}").status == 101


def test_an_unavailable_session_store_is_503(auth: Auth, tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "auth.sqlite3") as db:  # the sessions can no longer be read
        db.execute("DROP TABLE auth_sessions")
    cookie = f"{auth.cookie_name_for('127.0.0.1:8765')}=sid"
    answer = authenticated(auth)("/api/chats", headers={"cookie": cookie})
    assert answer.status == 503 and "unavailable" in answer.detail


# --- the composition -----------------------------------------------------------------------


def test_the_checks_are_composed_outermost_first() -> None:
    middleware = SecurityMiddleware(Reached(), ServerSettings(token=TOKEN), auth=None)  # type: ignore[arg-type]
    assert [type(c) for c in checks_in_order(middleware)] == [
        SecurityHeaders, HostCheck, OriginCheck, Authentication, BodySizeLimit,
    ]


def test_a_refusal_by_an_inner_check_carries_the_headers(tmp_path: Path) -> None:
    middleware = SecurityMiddleware(Reached(), ServerSettings(token=TOKEN, max_body_bytes=4), auth=None)  # type: ignore[arg-type]
    for answer in (
        request(middleware, headers={"host": "evil.example"}),
        request(middleware, method="POST", headers={"origin": "http://evil.example"}),
        request(middleware, method="POST", headers={"content-length": "5"}),
    ):
        assert answer.status in (403, 413)
        assert answer.headers[b"content-security-policy"] == CONTENT_SECURITY_POLICY.encode()



def test_a_prompt_over_the_body_limit_is_told_the_prompt_limit() -> None:
    # was: "request body larger than 10 bytes", which a person who typed a prompt cannot act on
    for headers, body in (({"content-length": "11"}, [b"x" * 11]), ({}, [b"x" * 6, b"y" * 6])):
        answer = request(BodySizeLimit(Reached(), 10, 8), "/api/chats/abc/runs", method="POST",
                         headers=headers, body=body)
        assert answer.status == 413 and answer.code == "prompt_too_large"  # (was body_too_large)
        assert "prompt is too long" in answer.detail and "at most 8 bytes" in answer.detail
    other = request(BodySizeLimit(Reached(), 10, 8), "/api/chats", method="POST",
                    headers={"content-length": "11"}, body=[b"x" * 11])
    assert other.detail == "request body larger than 10 bytes" and other.code == "body_too_large"


def test_a_prompt_longer_than_declared_is_prompt_too_large_too() -> None:
    # the body's code said the body, its message the prompt (the code a client acts on, the
    # message a person reads); a prompt is the body's only field: prompt_too_large, as the
    # route's own check of the prompt answers (the app answers the error's code)
    with pytest.raises(BodyTooLargeError, match="prompt is too long") as longer:
        request(BodySizeLimit(Reached(), 10, 8), "/api/chats/abc/runs", method="POST",
                headers={"content-length": "5"}, body=[b"x" * 6, b"y" * 6])
    assert getattr(longer.value, "code", "body_too_large") == "prompt_too_large"
    with pytest.raises(BodyTooLargeError) as elsewhere:
        request(BodySizeLimit(Reached(), 10, 8), "/api/chats", method="POST",
                headers={"content-length": "5"}, body=[b"x" * 6, b"y" * 6])
    assert getattr(elsewhere.value, "code", "body_too_large") == "body_too_large"


def test_a_prompt_over_the_body_limit_but_under_its_own_is_told_the_body_limit() -> None:
    # with --max-prompt-bytes above --max-body-bytes, the 413 said a 1.5 MB prompt was over a
    # 2 MB limit: the limit it passed is the body's, so that is the one to raise
    answer = request(BodySizeLimit(Reached(), 10, 20), "/api/chats/abc/runs", method="POST",
                     headers={"content-length": "15"}, body=[b"x" * 15])
    assert answer.status == 413 and "prompt is too long" in answer.detail
    assert "--max-body-bytes" in answer.detail and "at most 20 bytes" not in answer.detail
