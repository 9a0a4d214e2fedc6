"""The Origin check: a browser may change state or open a WebSocket only from this server's pages.

On every WebSocket upgrade and every state-changing request (not GET, HEAD or
OPTIONS), an ``Origin``, when present, must be this server's own origin (the
scheme ``http`` or ``https`` with the request's ``Host``) or an
``--allow-origin``; ``null`` and foreign origins are 403. A request without
``Origin`` (not from a browser) passes on, to the token check.

A sign-in attempt (a GET with ``?token=`` or ``?code=``) that a browser marks as made by
another site's page — ``Sec-Fetch-Site: cross-site`` or ``same-site`` (another port of the
same host name), or a foreign ``Origin`` — is 403 ``cross_site_sign_in`` before the token
check, so it takes nothing from the sign-in throttle: an ``<img src=".../?token=x">`` on
another site cannot lock the right token out. ``Sec-Fetch-Site: none`` (an address typed or
pasted, a link opened from a terminal or a bookmark) and ``same-origin`` sign in as before,
and so do clients that send neither header (not a browser).

Example:
    >>> origin_allowed("http://127.0.0.1:8765", "127.0.0.1:8765", frozenset())
    True
    >>> origin_allowed("null", "127.0.0.1:8765", frozenset())
    False
    >>> origin_allowed("https://app.example/", "127.0.0.1:8765", frozenset({"https://app.example"}))
    True
    >>> from_another_site({"sec-fetch-site": "cross-site", "host": "127.0.0.1:1"}, frozenset())
    True
    >>> from_another_site({"sec-fetch-site": "none", "host": "127.0.0.1:1"}, frozenset())
    False
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import parse_qsl, urlsplit

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
    try:
        parts = urlsplit(o)
    except ValueError:  # "http://[x": no address at all, so not this server's
        return False
    return parts.scheme in ("http", "https") and parts.netloc == host.strip().lower()


OTHER_SITES = frozenset({"cross-site", "same-site"})
"""``Sec-Fetch-Site`` values of a request made by another site's page."""

SIGN_IN_PARAMS = frozenset({"token", "code"})
"""Query parameters that present a secret (a sign-in link, or ``?token=`` on ``/api``)."""

CROSS_SITE_SIGN_IN = ("a sign-in from another site's page is refused (not counted against the "
                      "sign-in throttle): open the link printed by `cursor-agent-api serve` "
                      "directly (paste it in the address bar), or sign in on the server's page")
"""The 403's detail for :data:`SIGN_IN_PARAMS` sent from another site."""


def presents_secret(query: str) -> bool:
    """Whether a query string holds ``token`` or ``code`` (names URL-decoded, as the token
    check reads them).

    Example:
        >>> presents_secret("a=1&tok%65n=x"), presents_secret("after_seq=3")
        (True, False)
    """
    return any(k in SIGN_IN_PARAMS for k, _ in parse_qsl(query, keep_blank_values=True))


def from_another_site(headers: dict[str, str], allowed: frozenset[str]) -> bool:
    """Whether a browser says this request comes from another site's page: an ``Origin`` that
    is neither this server's nor an ``--allow-origin``; or, with no ``Origin`` (an ``<img>``, a
    link followed), ``Sec-Fetch-Site: cross-site`` or ``same-site``."""
    origin = headers.get("origin")
    if origin is not None:
        return not origin_allowed(origin, headers.get("host", ""), allowed)
    return headers.get("sec-fetch-site", "").strip().lower() in OTHER_SITES


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
    """Refuses (403) a WebSocket upgrade or state-changing request from a foreign ``Origin``,
    and a sign-in attempt from another site."""

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
            if presents_secret(scope.get("query_string", b"").decode("latin-1")) and (
                    from_another_site(headers, self.allowed)):
                await deny(scope, send, 403, CROSS_SITE_SIGN_IN, code="cross_site_sign_in")
                return
        await self.app(scope, receive, send)
