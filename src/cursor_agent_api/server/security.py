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
   or the cookie it was exchanged for; otherwise 401. A valid ``?token=`` on a
   GET sets the cookie (HttpOnly, SameSite=Strict); on a page (not ``/api``)
   the response is a redirect to the same URL without the token.

No CORS headers are ever sent; every answer carries ``nosniff``, ``no-referrer``,
``X-Frame-Options: DENY`` and a Content-Security-Policy without
inline script (:data:`CONTENT_SECURITY_POLICY`). The cookie's value is an HMAC of the token,
never the token itself. :func:`resolve_workspace` keeps workspaces under the
configured roots; :class:`RedactTokens` keeps tokens out of the access log.

Example:
    >>> from pathlib import Path
    >>> resolve_workspace("/", (Path("/tmp").resolve(),))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cursor_agent_api.server.security.WorkspaceError: workspace '/' is outside the allowed roots ...
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import orjson

from .settings import COOKIE_NAME, ServerSettings

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
_PUBLIC_PATHS = frozenset({"/api/auth/login"})


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


def cookie_value(token: str) -> str:
    """The cookie that stands for ``token``: an HMAC of it, not the token.

    Example:
        >>> cookie_value("t") == cookie_value("t") != cookie_value("u")
        True
    """
    return hmac.new(token.encode(), b"cursor-agent-api cookie v1", hashlib.sha256).hexdigest()


def set_cookie_header(token: str) -> tuple[bytes, bytes]:
    """The ``Set-Cookie`` header for a session authenticated by ``token``.

    Example:
        >>> b"HttpOnly" in set_cookie_header("t")[1]
        True
    """
    value = f"{COOKIE_NAME}={cookie_value(token)}; HttpOnly; SameSite=Strict; Path=/"
    return (b"set-cookie", value.encode())


def clear_cookie_header() -> tuple[bytes, bytes]:
    """The ``Set-Cookie`` header that logs the browser out."""
    value = f"{COOKIE_NAME}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"
    return (b"set-cookie", value.encode())


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
        >>> token_from_request({}, "after_seq=3&token=xyz")
        'xyz'
    """
    auth = headers.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    if scheme.lower() in ("token", "bearer") and value.strip():
        return value.strip()
    for k, v in parse_qsl(query, keep_blank_values=True):
        if k == "token":
            return v
    return None


class SecurityMiddleware:
    """The checks above, in front of the whole ASGI app.

    Example:
        >>> SecurityMiddleware.__name__
        'SecurityMiddleware'
    """

    def __init__(self, app: ASGIApp, settings: ServerSettings) -> None:
        self.app = app
        self.settings = settings
        self.hosts = settings.host_allowlist()
        self.origins = frozenset(o.rstrip("/").lower() for o in settings.allowed_origins)
        self._cookie = cookie_value(settings.token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        path: str = scope.get("path", "")
        method = scope.get("method", "GET") if kind == "http" else "WEBSOCKET"

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

        presented = token_from_request(headers, scope.get("query_string", b"").decode("latin-1"))
        token_ok = presented is not None and hmac.compare_digest(
            presented.encode(), self.settings.token.encode()
        )
        cookie_ok = hmac.compare_digest(
            _cookies(headers.get("cookie", "")).get(COOKIE_NAME, "").encode(),
            self._cookie.encode(),
        )
        protected = path.startswith(_PROTECTED_PREFIXES) and path not in _PUBLIC_PATHS
        if protected and not (token_ok or cookie_ok):
            why = "invalid token" if presented is not None else "authentication required"
            await self._deny(
                scope,
                send,
                401,
                f"{why}: send 'Authorization: token <token>' (or ?token=), or open the URL "
                "printed by `cursor-agent-api serve`",
            )
            return
        if kind == "http":
            send = self._with_headers(send, path)
        if kind == "http" and token_ok and method == "GET" and not cookie_ok:
            if not path.startswith("/api"):
                await self._redirect_without_token(scope, send)
                return
            send = self._with_cookie(send)
        await self.app(scope, receive, send)

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

    def _with_cookie(self, send: Send) -> Send:
        header = set_cookie_header(self.settings.token)

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), header]
            await send(message)

        return sending

    async def _redirect_without_token(self, scope: Scope, send: Send) -> None:
        query = [
            (k, v)
            for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1"), True)
            if k != "token"
        ]
        location = scope.get("path", "/") + (("?" + urlencode(query)) if query else "")
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", location.encode("latin-1")),
                    (b"cache-control", b"no-store"),
                    (b"content-length", b"0"),
                    set_cookie_header(self.settings.token),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})

    async def _deny(self, scope: Scope, send: Send, status: int, message: str) -> None:
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
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class BodyTooLargeError(Exception):
    """Raised while reading a request body past the limit (answered with 413).

    Example:
        >>> str(BodyTooLargeError("too big"))
        'too big'
    """


_TOKEN_RE = re.compile(r"(token=)[^&\s\"']+", re.IGNORECASE)


class RedactTokens(logging.Filter):
    """A logging filter that hides ``token=…`` values in log records (uvicorn's access log).

    Example:
        >>> r = logging.LogRecord("a", 20, "", 0, '"%s %s"', ("GET", "/?token=abc"), None)
        >>> RedactTokens().filter(r), r.args
        (True, ('GET', '/?token=[redacted]'))
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                _TOKEN_RE.sub(r"\1[redacted]", a) if isinstance(a, str) else a for a in record.args
            )
        if isinstance(record.msg, str) and "token=" in record.msg.lower():
            record.msg = _TOKEN_RE.sub(r"\1[redacted]", record.msg)
        return True
