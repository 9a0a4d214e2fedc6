"""The request-size check: no HTTP request body larger than ``max_body_bytes`` reaches the app.

* A declared ``Content-Length`` over the limit is 413 (``body_too_large``; on ``POST …/runs``,
  whose body is the prompt and nothing else, ``prompt_too_large``, as the route's own check
  of the prompt answers) at once, one that is not a
  decimal number 400; a body that turns out longer than declared raises
  :class:`BodyTooLargeError` while the app reads it (the app answers 413).
* A state-changing request without a length (chunked) is read here first,
  bounded, and 413 as soon as it passes the limit; the app then reads the
  buffered body.
* The check stands behind the token check (:mod:`.authentication`): no body of a request
  that is not signed in is read before it is refused. The paths open to all (sign-in,
  sign-out, the pages) have a limit of their own, ``public_limit`` (``serve``:
  :data:`PUBLIC_BODY_BYTES`, what a sign-in form needs): a client that is not signed in
  makes the server hold at most that much of a body.

WebSocket messages are bounded by the WebSocket server, not here.

Example:
    >>> str(BodyTooLargeError("request body larger than 10 bytes"))
    'request body larger than 10 bytes'
"""

from __future__ import annotations

import re

from .asgi import SAFE_METHODS, ASGIApp, Message, Receive, Scope, Send, deny, request_headers
from .authentication import is_protected

PUBLIC_BODY_BYTES = 16_384
"""The longest body of a request to a path open to all (``POST /api/auth/login``'s token)."""

_RUNS = re.compile(r"/api/chats/[^/]+/runs/?")
"""The path of ``POST /api/chats/{id}/runs``: its body is a prompt."""


class BodyTooLargeError(Exception):
    """Raised while reading a request body past the limit (answered with 413 and ``code``)."""

    def __init__(self, message: str, code: str = "body_too_large") -> None:
        super().__init__(message)
        self.code = code


class BodySizeLimit:
    """Keeps request bodies at or under ``limit`` bytes (413 otherwise); those to the paths
    that need no sign-in at or under ``public_limit`` (when given).

    Example:
        >>> check = BodySizeLimit(None, 1000, public_limit=10)  # type: ignore[arg-type]
        >>> check.limit_for({"path": "/api/auth/login"}), check.limit_for({"path": "/api/chats"})
        (10, 1000)
    """

    def __init__(self, app: ASGIApp, limit: int, prompt_limit: int | None = None,
                 public_limit: int | None = None) -> None:
        self.app = app
        self.limit = limit
        self.prompt_limit = prompt_limit
        self.public_limit = public_limit

    def limit_for(self, scope: Scope) -> int:
        """The limit of this request's body: ``public_limit`` on a path open to all."""
        if self.public_limit is None or is_protected(scope.get("path", "")):
            return self.limit
        return min(self.limit, self.public_limit)

    def refusal(self, scope: Scope) -> BodyTooLargeError:
        """The 413's message and code: ``prompt_too_large`` for a prompt (the message names
        the prompt), ``body_too_large`` for any other body.

        Example:
            >>> told = BodySizeLimit(None, 10, 8).refusal(  # type: ignore[arg-type]
            ...     {"method": "POST", "path": "/api/chats/c/runs"})
            >>> told.code, str(told).startswith("the prompt is too long")
            ('prompt_too_large', True)
            >>> BodySizeLimit(None, 10).refusal({"method": "PUT"}).code  # type: ignore[arg-type]
            'body_too_large'
        """
        code = "prompt_too_large" if self._is_prompt(scope) else "body_too_large"
        return BodyTooLargeError(self.too_large(scope), code)

    def _is_prompt(self, scope: Scope | None) -> bool:
        """Whether the request is ``POST …/runs`` (its body: a prompt), with a prompt limit."""
        return (self.prompt_limit is not None and scope is not None
                and scope.get("method") == "POST" and bool(_RUNS.fullmatch(scope.get("path", ""))))

    def too_large(self, scope: Scope | None = None) -> str:
        r"""The 413's message; for a prompt (``POST …/runs``) it names the prompt's own limit.

        Example:
            >>> BodySizeLimit(None, 10).too_large()  # type: ignore[arg-type]
            'request body larger than 10 bytes'
            >>> told = BodySizeLimit(None, 10, 8).too_large(  # type: ignore[arg-type]
            ...     {"method": "POST", "path": "/api/chats/c/runs"})
            >>> print(*told.split("; "), sep="\n")
            the prompt is too long: request body larger than 10 bytes
            a prompt may be at most 8 bytes (--max-prompt-bytes)
            >>> BodySizeLimit(None, 10, 20).too_large(  # type: ignore[arg-type]
            ...     {"method": "POST", "path": "/api/chats/c/runs"})
            'the prompt is too long: request body larger than 10 bytes (--max-body-bytes)'
        """
        text = f"request body larger than {self.limit if scope is None else self.limit_for(scope)} bytes"
        if self._is_prompt(scope) and self.prompt_limit is not None:
            if self.prompt_limit >= self.limit:  # the body's limit is the one it passed
                return f"the prompt is too long: {text} (--max-body-bytes)"
            return (f"the prompt is too long: {text}; a prompt may be at most "
                    f"{self.prompt_limit} bytes (--max-prompt-bytes)")
        return text

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = request_headers(scope).get("content-length")
        if length is not None:
            if not length.isdigit():
                await deny(scope, send, 400, "invalid Content-Length", code="invalid_content_length")
                return
            if int(length) > self.limit_for(scope):
                await self._deny(scope, send)
                return
            receive = self._limited(receive, scope)
        elif scope.get("method", "GET") not in SAFE_METHODS:
            buffered = await self._read_bounded(receive, self.limit_for(scope))
            if buffered is None:
                await self._deny(scope, send)
                return
            receive = buffered
        await self.app(scope, receive, send)

    async def _deny(self, scope: Scope, send: Send) -> None:
        refused = self.refusal(scope)
        await deny(scope, send, 413, str(refused), code=refused.code)

    async def _read_bounded(self, receive: Receive, limit: int) -> Receive | None:
        """The whole body, read now, replayed to the app; ``None`` past the limit."""
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

    def _limited(self, receive: Receive, scope: Scope) -> Receive:
        """``receive``, raising :class:`BodyTooLargeError` once the body passes the limit."""
        seen = 0
        limit = self.limit_for(scope)

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise self.refusal(scope)
            return message

        return limited
