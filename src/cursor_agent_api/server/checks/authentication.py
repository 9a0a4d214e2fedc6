"""The token and session check: who may use the API, and how a browser signs in.

* Every ``/api`` path (but sign-in and sign-out) and ``/openapi.json`` (and
  ``/docs``, ``/redoc``) needs the token (``Authorization: token T``,
  ``Bearer T`` or ``?token=T``) or a live session cookie (:mod:`..auth`);
  otherwise 401, and 429 while :class:`~cursor_agent_api.server.auth.LoginThrottle`
  holds back a flood of wrong tokens. ``?token=`` on an ``/api`` path
  authenticates that request only.
* A GET outside ``/api`` with ``?code=`` (a one-time login code) or ``?token=``
  signs the browser in: a new session in its cookie, and a 303 to the same URL
  without the secret (with ``signin=refused`` when the secret was wrong).
* When the database that holds the sessions is unavailable, 503.

Example:
    >>> token_from_request({"authorization": "token abc"}, "")
    'abc'
    >>> token_from_request({}, "after_seq=3&tok%65n=xyz")
    'xyz'
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, quote, urlencode

from ..auth import Throttled
from ..store.errors import DatabaseError, StoreUnavailableError
from .asgi import ASGIApp, Receive, Scope, Send, deny, is_request, request_headers, request_method

if TYPE_CHECKING:
    from ..auth import Auth

PROTECTED_PREFIXES = ("/api", "/docs", "/redoc", "/openapi.json")
"""Paths that need the token or a session."""

PUBLIC_PATHS = frozenset({"/api/auth/login", "/api/auth/logout"})
"""The ``/api`` paths open to all (they sign in and out)."""

SECRET_PARAMS = ("token", "code", "signin")
"""Query parameters the sign-in redirect drops."""


def token_from_request(headers: dict[str, str], query: str) -> str | None:
    """The token a request presents (header first, then ``?token=``)."""
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


def cookies(header: str) -> dict[str, str]:
    """The name/value pairs of a ``Cookie`` header.

    Example:
        >>> cookies("a=1; sid=x=y")
        {'a': '1', 'sid': 'x=y'}
    """
    out: dict[str, str] = {}
    for part in header.split(";"):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def is_protected(path: str) -> bool:
    """True if ``path`` needs the token or a session.

    Example:
        >>> is_protected("/api/chats"), is_protected("/api/auth/login"), is_protected("/")
        (True, False, False)
    """
    return path.startswith(PROTECTED_PREFIXES) and path not in PUBLIC_PATHS


class Authentication:
    """Lets through what needs no sign-in or is signed in; answers 401/429/503/303 otherwise."""

    def __init__(self, app: ASGIApp, auth: Auth) -> None:
        self.app = app
        self.auth = auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not is_request(scope):
            await self.app(scope, receive, send)
            return
        headers = request_headers(scope)
        path: str = scope.get("path", "")
        query = scope.get("query_string", b"").decode("latin-1")
        from_header = header_token(headers)
        from_query = query_value(query, "token")
        presented = from_header if from_header is not None else from_query
        protected = is_protected(path)
        # A browser link (?token= or ?code= on a GET outside /api) becomes a session cookie,
        # and the answer is a redirect to the same URL without the secret.
        code = query_value(query, "code")
        sign_in = (
            request_method(scope) == "GET"
            and not path.startswith("/api")
            and (from_query is not None or code is not None)
        )
        if not (protected or sign_in):
            await self.app(scope, receive, send)
            return
        sid = cookies(headers.get("cookie", "")).get(self.auth.cookie_name_for(headers.get("host", "")))
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
        except (DatabaseError, StoreUnavailableError):
            await deny(scope, send, 503, "the server's database is unavailable; retry shortly",
                       code="database_unavailable")
            return
        await self.app(scope, receive, send)

    async def _token_ok(self, scope: Scope, send: Send, presented: str) -> bool:
        """Check a presented token under the throttle; answers 429 or 401 itself when not."""
        try:
            if self.auth.check_secret(token=presented):
                return True
        except Throttled as throttled:
            await _throttled(scope, send, throttled)
            return False
        await self._unauthorized(scope, send, "invalid token")
        return False

    async def _unauthorized(self, scope: Scope, send: Send, why: str) -> None:
        await deny(
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
            try:
                # a code is spent once the session is stored (a 503 leaves it good)
                sid = await self.auth.sign_in(token=token, code=code)
            except Throttled as throttled:
                await _throttled(scope, send, throttled)
                return
            if sid is not None:
                cookie = self.auth.set_cookie(sid, request_headers(scope).get("host", ""))
            else:
                if protected:
                    await self._unauthorized(scope, send, "invalid token or login code")
                    return
                # the page says why it asks for a sign-in (the secret itself leaves the URL)
                await _redirect_without_secret(scope, send, None, refused=True)
                return
        await _redirect_without_secret(scope, send, cookie)


async def _throttled(scope: Scope, send: Send, throttled: Throttled) -> None:
    await deny(scope, send, 429, str(throttled), [(b"retry-after", str(throttled.seconds).encode())])


def _local_path(path: str) -> str:
    r"""``path`` as a redirect that stays on this server: one leading slash (``//host`` and
    ``/\host`` are other sites to a browser), percent-encoded (ASCII, as a header must be).

    Example:
        >>> _local_path("//evil.example/login"), _local_path("/\\x"), _local_path("/€ 1")
        ('/evil.example/login', '/x', '/%E2%82%AC%201')
    """
    return "/" + quote(path.lstrip("/\\"), safe="/:@!$&'()*+,;=~")


async def _redirect_without_secret(
    scope: Scope, send: Send, cookie: tuple[bytes, bytes] | None, refused: bool = False
) -> None:
    query = [
        (k, v)
        for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1"), True)
        if k not in SECRET_PARAMS
    ]
    if refused:
        query.append(("signin", "refused"))
    location = _local_path(scope.get("path", "/")) + (("?" + urlencode(query)) if query else "")
    headers = [
        (b"location", location.encode("ascii")),
        (b"cache-control", b"no-store"),
        (b"content-length", b"0"),
    ]
    if cookie is not None:
        headers.append(cookie)
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
