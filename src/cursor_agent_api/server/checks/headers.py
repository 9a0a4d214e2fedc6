"""The headers every HTTP answer carries: one Content-Security-Policy and no sniffing, framing or referrer.

:class:`SecurityHeaders` adds them to whatever the app (or a check inside it)
answers, unless the answer set its own; ``/api`` answers are also ``no-store``.
No CORS header is ever sent.

It also answers for the app when the app raises before answering: Starlette's
last-resort 500 is written by its outermost middleware, outside this one, and
would go out bare (and as text). Here the 500 goes out first, with the headers,
as the API's error body (``{"detail", "code": "internal_error"}``, :mod:`..errors`),
and the exception goes on up to be logged as before.

Example:
    >>> import asyncio
    >>> async def app(scope, receive, send):
    ...     await send({"type": "http.response.start", "status": 200, "headers": []})
    >>> sent = []
    >>> async def send(message):
    ...     sent.append(message)
    >>> asyncio.run(SecurityHeaders(app)({"type": "http", "path": "/"}, None, send))
    >>> dict(sent[0]["headers"])[b"x-frame-options"]
    b'DENY'
"""

from __future__ import annotations

import orjson

from ..errors import code_for
from .asgi import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'self'"
)
"""Sent with every page and API answer: no inline script, nothing foreign."""

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
)
"""What every HTTP answer carries (an answer's own value of one of them wins)."""

_INTERNAL_ERROR = orjson.dumps(
    {"detail": "internal error: the server's log has the details", "code": code_for(500)})
"""The last-resort 500's body: an error body like every other (no traceback, nothing of the error)."""


def headers_for(path: str) -> list[tuple[bytes, bytes]]:
    """The headers an answer for ``path`` gets: :data:`SECURITY_HEADERS`, ``no-store`` under ``/api``.

    Example:
        >>> (b"cache-control", b"no-store") in headers_for("/api/chats"), len(headers_for("/"))
        (True, 4)
    """
    extra = list(SECURITY_HEADERS)
    if path.startswith("/api"):
        extra.append((b"cache-control", b"no-store"))
    return extra


class SecurityHeaders:
    """Adds :func:`headers_for` to every HTTP answer, a 500 for an app that raised included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = headers_for(scope.get("path", ""))
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                message["headers"] = headers + [h for h in extra if h[0] not in present]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception:
            if not started:
                await sending(
                    {
                        "type": "http.response.start",
                        "status": 500,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(_INTERNAL_ERROR)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": _INTERNAL_ERROR})
            raise
