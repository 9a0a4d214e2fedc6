"""What every check shares: the ASGI types, the request's headers, and the refusal.

A check is a plain ASGI middleware: it either passes the request on to the app it
wraps or answers it itself with :func:`deny` (a JSON ``{"detail", "code"}`` for HTTP,
a refused upgrade for a WebSocket). Scopes other than ``http`` and ``websocket``
(the lifespan) pass through every check untouched.

Example:
    >>> request_headers({"headers": [(b"Host", b"127.0.0.1:1")]})
    {'host': '127.0.0.1:1'}
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import orjson

from ..errors import code_for

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that change nothing: no Origin check, and no body read ahead."""


def is_request(scope: Scope) -> bool:
    """True for the scopes the checks look at (HTTP requests and WebSocket upgrades).

    Example:
        >>> is_request({"type": "websocket"}), is_request({"type": "lifespan"})
        (True, False)
    """
    return scope["type"] in ("http", "websocket")


def request_headers(scope: Scope) -> dict[str, str]:
    """The request's headers, names lower-cased (the last of a repeated name wins)."""
    out: dict[str, str] = {}
    for k, v in scope.get("headers", ()):
        out[k.decode("latin-1").lower()] = v.decode("latin-1")
    return out


def request_method(scope: Scope) -> str:
    """The HTTP method, or ``"WEBSOCKET"`` for an upgrade.

    Example:
        >>> request_method({"type": "http", "method": "POST"}), request_method({"type": "websocket"})
        ('POST', 'WEBSOCKET')
    """
    return str(scope.get("method", "GET")) if scope["type"] == "http" else "WEBSOCKET"


_REFUSED_UPGRADE: contextvars.ContextVar[bool] = contextvars.ContextVar("refused_upgrade", default=False)
"""Set by :func:`deny` in the task of a WebSocket upgrade it answered with an HTTP refusal."""

INCOMPLETE_HANDSHAKE = "ASGI callable returned without completing handshake."
"""What uvicorn's ``websockets-sansio`` logs at ERROR after every upgrade refused with an HTTP
answer (the ``websocket.http.response`` extension): it never notes that answer as the
handshake's end (uvicorn PR #3138, open)."""


class RefusedUpgrades(logging.Filter):
    """Drops uvicorn's :data:`INCOMPLETE_HANDSHAKE` error for an upgrade that :func:`deny`
    refused (a 401 or 403 is routine, the client got its answer); an application that really
    returned without answering still gets the error. For the ``uvicorn.error`` logger.

    Example:
        >>> record = logging.LogRecord("uvicorn.error", logging.ERROR, "", 0,
        ...                            INCOMPLETE_HANDSHAKE, None, None)
        >>> RefusedUpgrades().filter(record)  # no refusal in this context: a real error
        True
        >>> contextvars.copy_context().run(lambda: (_REFUSED_UPGRADE.set(True),
        ...                                         RefusedUpgrades().filter(record))[1])
        False
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not (_REFUSED_UPGRADE.get() and record.getMessage() == INCOMPLETE_HANDSHAKE)


async def deny(
    scope: Scope,
    send: Send,
    status: int,
    message: str,
    extra: list[tuple[bytes, bytes]] | None = None,
    code: str | None = None,
) -> None:
    """Answer ``status`` with ``{"detail": message, "code": code}`` (and the ``extra``
    headers; ``code``: the status's generic one by default, :mod:`..errors`).

    A WebSocket upgrade is refused with that HTTP answer when the server supports
    it (the ``websocket.http.response`` extension), else closed with code 1008.
    A 401 says ``WWW-Authenticate: token``.
    """
    body = orjson.dumps({"detail": message, "code": code or code_for(status)})
    length = (b"content-length", str(len(body)).encode())
    if scope["type"] == "websocket":
        if "websocket.http.response" in (scope.get("extensions") or {}):
            _REFUSED_UPGRADE.set(True)  # (uvicorn then logs an error: RefusedUpgrades)
            await send(
                {
                    "type": "websocket.http.response.start",
                    "status": status,
                    "headers": [(b"content-type", b"application/json"), length],
                }
            )
            await send({"type": "websocket.http.response.body", "body": body})
        else:
            await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
        return
    headers = [(b"content-type", b"application/json"), length]
    if status == 401:
        headers.append((b"www-authenticate", b"token"))
    headers += extra or []
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
