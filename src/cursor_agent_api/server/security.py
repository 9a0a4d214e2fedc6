"""Local-first security (Jupyter Server's model): token, cookie, Host, Origin, sizes, roots.

:class:`SecurityMiddleware` is a plain ASGI middleware in front of the whole
app, for HTTP and WebSocket alike, in this order:

1. **Host allowlist** — the ``Host`` header's name must be a loopback name, the
   bound address or an ``--allow-host``; anything else is 403 (this is what
   defeats DNS rebinding: a rebinding page's requests carry its own host name).
2. **Origin** — on every WebSocket upgrade and every state-changing request
   (not GET/HEAD/OPTIONS) an ``Origin``, when present, must be this server's
   own origin or an ``--allow-origin``; ``null`` and foreign origins are 403.
   Requests without ``Origin`` (non-browser clients) pass to the token check.
3. **Body size** — more than ``max_body_bytes`` is 413, read or declared.
4. **Authentication** — every ``/api`` path and ``/openapi.json``
   needs the token (``Authorization: token T``, ``Bearer T`` or ``?token=T``)
   or a live session cookie (:mod:`.auth`); otherwise 401, and 429 while
   :class:`~.auth.LoginThrottle` holds back a flood of wrong tokens. A GET
   outside ``/api`` with ``?code=`` (a one-time login code) or ``?token=`` signs
   the browser in: a new session in its cookie, and a redirect to the same URL
   without the secret. ``?token=`` on an ``/api`` path authenticates that request
   only.

No CORS headers are ever sent; every answer carries ``nosniff``, ``no-referrer``,
``X-Frame-Options: DENY`` and the one Content-Security-Policy, ``'self'`` only
(:data:`CONTENT_SECURITY_POLICY`). :func:`resolve_workspace` keeps workspaces under the
configured roots; :class:`RedactTokens` keeps tokens and codes out of the access log.

Example:
    >>> from pathlib import Path
    >>> resolve_workspace("/", (Path("/tmp").resolve(),))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cursor_agent_api.server.security.WorkspaceError: workspace '/' is outside the allowed roots ...
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote_plus, urlencode, urlsplit

import orjson
from sqlalchemy.exc import SQLAlchemyError

from .settings import ServerSettings

if TYPE_CHECKING:
    from .auth import Auth

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'self'"
)
"""Sent with every page and API answer: no inline script, nothing foreign."""
_SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]
_PROTECTED_PREFIXES = ("/api", "/docs", "/redoc", "/openapi.json")
_PUBLIC_PATHS = frozenset({"/api/auth/login", "/api/auth/logout"})


class WorkspaceError(Exception):
    """A workspace that is not allowed: ``status`` is the HTTP status to answer.

    Example:
        >>> WorkspaceError("nope", 403).status
        403
    """

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def resolve_workspace(requested: str, roots: tuple[Path, ...]) -> Path:
    """The real directory ``requested`` names, if it lies under one of ``roots``.

    A relative path is taken from the first root. The path is resolved
    (symlinks followed, ``..`` collapsed) *before* the check, so neither can
    escape. Raises :class:`WorkspaceError` (403 outside the roots, 400 when
    it does not exist or is not a directory).

    Example:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp()).resolve()
        >>> resolve_workspace(".", (root,)) == root
        True
        >>> resolve_workspace("../..", (root,))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        cursor_agent_api.server.security.WorkspaceError: workspace '../..' is outside the allowed roots ...
    """
    if not requested or "\x00" in requested:
        raise WorkspaceError("workspace must be a non-empty path", 400)
    if not roots:
        raise WorkspaceError("no workspace roots are configured", 403)
    raw = Path(requested).expanduser()
    candidate = raw if raw.is_absolute() else roots[0] / raw
    try:
        resolved = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        # Tell "outside" from "missing" without revealing what exists outside.
        lexical = Path(*_normalize(candidate.parts)) if candidate.parts else candidate
        if not any(_under(lexical, r) for r in roots):
            raise WorkspaceError(_outside(requested, roots), 403) from None
        raise WorkspaceError(f"workspace {requested!r} does not exist", 400) from None
    if not any(_under(resolved, r) for r in roots):
        raise WorkspaceError(_outside(requested, roots), 403)
    if not resolved.is_dir():
        raise WorkspaceError(f"workspace {requested!r} is not a directory", 400)
    return resolved


def _outside(requested: str, roots: tuple[Path, ...]) -> str:
    listed = ", ".join(str(r) for r in roots)
    return (
        f"workspace {requested!r} is outside the allowed roots ({listed}); "
        "start the server with --root to allow another directory"
    )


def _normalize(parts: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for part in parts:
        if part == "..":
            if len(out) > 1:
                out.pop()
        elif part != ".":
            out.append(part)
    return out


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in scope.get("headers", ()):
        out[k.decode("latin-1").lower()] = v.decode("latin-1")
    return out


def _host_name(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    if host.count(":") == 1:
        return host.split(":", 1)[0]
    return host


def _cookies(header: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in header.split(";"):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def token_from_request(headers: dict[str, str], query: str) -> str | None:
    """The token a request presents (header first, then ``?token=``).

    Example:
        >>> token_from_request({"authorization": "token abc"}, "")
        'abc'
        >>> token_from_request({}, "after_seq=3&tok%65n=xyz")
        'xyz'
    """
    return header_token(headers) or query_value(query, "token")


def header_token(headers: dict[str, str]) -> str | None:
    """The token of an ``Authorization: token T`` (or ``Bearer T``) header.

    Example:
        >>> header_token({"authorization": "Bearer abc"}), header_token({})
        ('abc', None)
    """
    auth = headers.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    if scheme.lower() in ("token", "bearer") and value.strip():
        return value.strip()
    return None


def query_value(query: str, name: str) -> str | None:
    """The first value of ``name`` in a query string, names and values URL-decoded.

    Example:
        >>> query_value("a=1&tok%65n=x%2By", "token")
        'x+y'
    """
    for k, v in parse_qsl(query, keep_blank_values=True):
        if k == name:
            return v
    return None


class SecurityMiddleware:
    """The checks above, in front of the whole ASGI app.

    Tested over HTTP in ``tests/server/test_security.py`` and ``test_auth.py``.
    """

    def __init__(self, app: ASGIApp, settings: ServerSettings, auth: Auth) -> None:
        self.app = app
        self.settings = settings
        self.auth = auth
        self.hosts = settings.host_allowlist()
        self.origins = frozenset(o.rstrip("/").lower() for o in settings.allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        path: str = scope.get("path", "")
        method = scope.get("method", "GET") if kind == "http" else "WEBSOCKET"
        if kind == "http":
            send = self._with_headers(send, path)

        host = headers.get("host", "")
        if _host_name(host) not in self.hosts:
            await self._deny(
                scope,
                send,
                403,
                f"Host {host!r} is not allowed (DNS rebinding "
                "protection); use http://127.0.0.1 or start with --allow-host",
            )
            return
        origin = headers.get("origin")
        checked = kind == "websocket" or method not in _SAFE_METHODS
        if checked and origin is not None and not self._origin_ok(origin, host):
            await self._deny(scope, send, 403, f"Origin {origin!r} is not allowed")
            return
        if kind == "http":
            length = headers.get("content-length")
            if length is not None:
                if not length.isdigit():
                    await self._deny(scope, send, 400, "invalid Content-Length")
                    return
                if int(length) > self.settings.max_body_bytes:
                    await self._deny(scope, send, 413, self._too_large())
                    return
                receive = self._limit_body(receive)
            elif method not in _SAFE_METHODS:
                # No declared length (chunked): read it here, bounded, before the app does.
                buffered = await self._read_bounded(receive)
                if buffered is None:
                    await self._deny(scope, send, 413, self._too_large())
                    return
                receive = buffered

        query = scope.get("query_string", b"").decode("latin-1")
        from_header = header_token(headers)
        from_query = query_value(query, "token")
        presented = from_header if from_header is not None else from_query
        sid = _cookies(headers.get("cookie", "")).get(self.auth.cookie_name)
        protected = path.startswith(_PROTECTED_PREFIXES) and path not in _PUBLIC_PATHS
        # A browser link (?token= or ?code= on a GET outside /api) becomes a session cookie,
        # and the answer is a redirect to the same URL without the secret.
        code = query_value(query, "code")
        sign_in = (
            kind == "http"
            and method == "GET"
            and not path.startswith("/api")
            and (from_query is not None or code is not None)
        )
        if not (protected or sign_in):
            await self.app(scope, receive, send)
            return
        try:
            session_ok = bool(sid) and await self.auth.check_session(sid or "")
            if sign_in:
                await self._sign_in(scope, send, session_ok, from_query, code, protected)
                return
            if not session_ok:
                if presented is None:
                    await self._unauthorized(scope, send, "authentication required")
                    return
                if not await self._token_ok(scope, send, presented):
                    return
        except SQLAlchemyError:
            await self._deny(scope, send, 503, "the server's database is unavailable; retry shortly")
            return
        await self.app(scope, receive, send)

    async def _token_ok(self, scope: Scope, send: Send, presented: str) -> bool:
        """Check a presented token under the throttle; answers 429 or 401 itself when not."""
        wait = self.auth.throttle.retry_after()
        if wait:
            await self._throttled(scope, send, wait)
            return False
        if self.auth.token_matches(presented):
            return True
        self.auth.throttle.failed()
        await self._unauthorized(scope, send, "invalid token")
        return False

    async def _throttled(self, scope: Scope, send: Send, wait: float) -> None:
        seconds = max(1, math.ceil(wait))
        await self._deny(
            scope,
            send,
            429,
            f"too many failed sign-ins; retry in {seconds} s",
            [(b"retry-after", str(seconds).encode())],
        )

    async def _unauthorized(self, scope: Scope, send: Send, why: str) -> None:
        await self._deny(
            scope,
            send,
            401,
            f"{why}: send 'Authorization: token <token>', or open the link printed by "
            "`cursor-agent-api serve` (or sign in on its page with the token)",
        )

    async def _sign_in(
        self,
        scope: Scope,
        send: Send,
        session_ok: bool,
        token: str | None,
        code: str | None,
        protected: bool,
    ) -> None:
        cookie: tuple[bytes, bytes] | None = None
        if not session_ok:
            wait = self.auth.throttle.retry_after()
            if wait:
                await self._throttled(scope, send, wait)
                return
            ok = (code is not None and self.auth.redeem_code(code)) or (
                token is not None and self.auth.token_matches(token)
            )
            if ok:
                cookie = self.auth.set_cookie(await self.auth.create_session())
            else:
                self.auth.throttle.failed()
                if protected:
                    await self._unauthorized(scope, send, "invalid token or login code")
                    return
                # the page says why it asks for a sign-in (the secret itself leaves the URL)
                await self._redirect_without_secret(scope, send, None, refused=True)
                return
        await self._redirect_without_secret(scope, send, cookie)

    @staticmethod
    def _with_headers(send: Send, path: str) -> Send:
        extra = list(_SECURITY_HEADERS)
        extra.append((b"content-security-policy", CONTENT_SECURITY_POLICY.encode()))
        if path.startswith("/api"):
            extra.append((b"cache-control", b"no-store"))

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                message["headers"] = headers + [h for h in extra if h[0] not in present]
            await send(message)

        return sending

    def _too_large(self) -> str:
        return f"request body larger than {self.settings.max_body_bytes} bytes"

    def _origin_ok(self, origin: str, host: str) -> bool:
        o = origin.rstrip("/").lower()
        if o in self.origins:
            return True
        parts = urlsplit(o)
        return parts.scheme in ("http", "https") and parts.netloc == host.strip().lower()

    async def _read_bounded(self, receive: Receive) -> Receive | None:
        limit = self.settings.max_body_bytes
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay

    def _limit_body(self, receive: Receive) -> Receive:
        limit = self.settings.max_body_bytes
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLargeError(self._too_large())
            return message

        return limited

    async def _redirect_without_secret(
        self, scope: Scope, send: Send, cookie: tuple[bytes, bytes] | None, refused: bool = False
    ) -> None:
        query = [
            (k, v)
            for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1"), True)
            if k not in ("token", "code", "signin")
        ]
        if refused:
            query.append(("signin", "refused"))
        location = scope.get("path", "/") + (("?" + urlencode(query)) if query else "")
        headers = [
            (b"location", location.encode("latin-1")),
            (b"cache-control", b"no-store"),
            (b"content-length", b"0"),
        ]
        if cookie is not None:
            headers.append(cookie)
        await send({"type": "http.response.start", "status": 303, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    async def _deny(
        self,
        scope: Scope,
        send: Send,
        status: int,
        message: str,
        extra: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        body = orjson.dumps({"detail": message})
        if scope["type"] == "websocket":
            # Refuse the upgrade with an HTTP response when the server supports it.
            if "websocket.http.response" in scope.get("extensions", {}) or {}:
                await send(
                    {
                        "type": "websocket.http.response.start",
                        "status": status,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "websocket.http.response.body", "body": body})
            else:
                await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
            return
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        if status == 401:
            headers.append((b"www-authenticate", b"token"))
        headers += extra or []
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class BodyTooLargeError(Exception):
    """Raised while reading a request body past the limit (answered with 413).

    Example:
        >>> str(BodyTooLargeError("too big"))
        'too big'
    """


_TOKEN_RE = re.compile(r"(token=)[^&\s\"']+", re.IGNORECASE)
_PARAM_RE = re.compile(r"([?&;])([^=&;\s\"'?#]*)=([^&;\s\"'#]*)")
_SECRET_PARAMS = frozenset({"token", "code"})


def _decoded_name(name: str) -> str:
    for _ in range(3):  # %2565 -> %65 -> e: whatever a server might decode, decode here
        plain = unquote_plus(name)
        if plain == name:
            break
        name = plain
    return name.strip().lower()


def redact(text: str) -> str:
    """``text`` with the value of every ``token``/``code`` query parameter hidden.

    Parameter names are URL-decoded first: ``?tok%65n=T`` is ``?token=T`` to the server.

    Example:
        >>> redact("GET /api/chats?a=1&tok%65n=s3cret&code=x")
        'GET /api/chats?a=1&tok%65n=[redacted]&code=[redacted]'
    """

    def hide(m: re.Match[str]) -> str:
        if _decoded_name(m.group(2)) in _SECRET_PARAMS:
            return f"{m.group(1)}{m.group(2)}=[redacted]"
        return m.group(0)

    return _TOKEN_RE.sub(r"\1[redacted]", _PARAM_RE.sub(hide, text))


class RedactTokens(logging.Filter):
    """A logging filter that hides ``token``/``code`` values in log records (uvicorn's access log).

    Example:
        >>> r = logging.LogRecord("a", 20, "", 0, '"%s %s"', ("GET", "/?TOK%45N=abc"), None)
        >>> RedactTokens().filter(r), r.args
        (True, ('GET', '/?TOK%45N=[redacted]'))
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        return True
