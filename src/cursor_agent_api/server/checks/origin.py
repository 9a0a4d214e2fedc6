"""The Origin check: a browser may change state or open a WebSocket only from this server's pages.

On every WebSocket upgrade and every state-changing request (not GET, HEAD or
OPTIONS), an ``Origin``, when present, must be this server's own origin (the
scheme ``http`` or ``https`` with the request's ``Host``) or an
``--allow-origin``; ``null`` and foreign origins are 403. A request without
``Origin`` (not from a browser) passes on, to the token check.

Example:
    >>> origin_allowed("http://127.0.0.1:8765", "127.0.0.1:8765", frozenset())
    True
    >>> origin_allowed("null", "127.0.0.1:8765", frozenset())
    False
    >>> origin_allowed("https://app.example/", "127.0.0.1:8765", frozenset({"https://app.example"}))
    True
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from .asgi import (
    SAFE_METHODS,
    ASGIApp,
    Receive,
    Scope,
    Send,
    deny,
    is_request,
    request_headers,
    request_method,
)


def origin_allowed(origin: str, host: str, allowed: frozenset[str]) -> bool:
    """True if ``origin`` is in ``allowed`` (normalized) or is this ``host``'s own origin."""
    o = origin.rstrip("/").lower()
    if o in allowed:
        return True
    parts = urlsplit(o)
    return parts.scheme in ("http", "https") and parts.netloc == host.strip().lower()


def refused_origin(origin: str) -> str:
    """The 403's detail for a foreign ``origin``: what it is, and the fix when it is the address
    the server is reached at (a proxy that rewrites ``Host``; the origin itself is not named in
    the option: a page of another site must not hand the user a command that lets it in).

    Example:
        >>> refused_origin("https://agent.example")  # doctest: +ELLIPSIS
        "Origin 'https://agent.example' is not allowed (not this server's own address); behind ...
    """
    return (f"Origin {origin!r} is not allowed (not this server's own address); behind a "
            "proxy that rewrites the Host header, start the server with --allow-origin <origin>")


class OriginCheck:
    """Refuses (403) a WebSocket upgrade or state-changing request from a foreign ``Origin``."""

    def __init__(self, app: ASGIApp, allowed: Iterable[str]) -> None:
        self.app = app
        self.allowed = frozenset(o.rstrip("/").lower() for o in allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if is_request(scope):
            headers = request_headers(scope)
            origin = headers.get("origin")
            checked = scope["type"] == "websocket" or request_method(scope) not in SAFE_METHODS
            if (
                checked
                and origin is not None
                and not origin_allowed(origin, headers.get("host", ""), self.allowed)
            ):
                await deny(scope, send, 403, refused_origin(origin), code="origin_not_allowed")
                return
        await self.app(scope, receive, send)
