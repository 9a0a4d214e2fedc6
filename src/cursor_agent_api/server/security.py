"""Local-first security (Jupyter Server's model): the request checks, composed in one place.

:class:`SecurityMiddleware` puts the checks of :mod:`.checks` in front of the
whole app, for HTTP and WebSocket alike, outermost first:

1. :class:`~.checks.headers.SecurityHeaders` — every HTTP answer, a refusal or a
   500 included, carries ``nosniff``, ``no-referrer``, ``X-Frame-Options: DENY``
   and the one Content-Security-Policy, ``'self'`` only; no CORS header is sent;
2. :class:`~.checks.host.HostCheck` — the ``Host`` name must be a loopback name,
   the bound address or an ``--allow-host`` (403: DNS rebinding);
3. :class:`~.checks.origin.OriginCheck` — a WebSocket upgrade or a state-changing
   request with a foreign or ``null`` ``Origin`` is 403, and so is a sign-in link that
   another site's page opens (``cross_site_sign_in``: the throttle is not touched);
4. :class:`~.checks.authentication.Authentication` — ``/api`` needs the token or a
   session cookie (401, 429 under a flood of wrong tokens); sign-in links become
   a session cookie. It decides from the headers alone: no body is read before it;
5. :class:`~.checks.body_size.BodySizeLimit` — a body over ``max_body_bytes`` is
   413, read or declared (over :data:`~.checks.body_size.PUBLIC_BODY_BYTES` on a path
   open to all: sign-in).

The other guards live beside them: :func:`~.workspaces.resolve_workspace` keeps
workspaces under the configured roots, :class:`~.redaction.RedactTokens` keeps
tokens and codes out of the access log. This module also gives the names the rest of
the server imports from it.

Example:
    >>> from cursor_agent_api.server.settings import ServerSettings
    >>> app = object()
    >>> [type(layer).__name__ for layer in checks_in_order(SecurityMiddleware(
    ...     app, ServerSettings(token="t" * 16), auth=None))]  # doctest: +NORMALIZE_WHITESPACE
    ['SecurityHeaders', 'HostCheck', 'OriginCheck', 'Authentication', 'BodySizeLimit']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .checks.asgi import ASGIApp, Receive, Scope, Send
from .checks.authentication import Authentication, header_token, query_value, token_from_request
from .checks.body_size import PUBLIC_BODY_BYTES, BodySizeLimit, BodyTooLargeError
from .checks.headers import CONTENT_SECURITY_POLICY, SecurityHeaders
from .checks.host import HostCheck
from .checks.origin import OriginCheck
from .redaction import RedactTokens, redact
from .settings import ServerSettings
from .workspaces import WorkspaceError, resolve_workspace

if TYPE_CHECKING:
    from .auth import Auth

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "BodyTooLargeError",
    "RedactTokens",
    "SecurityMiddleware",
    "WorkspaceError",
    "checks_in_order",
    "header_token",
    "query_value",
    "redact",
    "resolve_workspace",
    "token_from_request",
]


class SecurityMiddleware:
    """The checks, outermost first, in front of ``app`` (the order is the module's list).

    Tested check by check in ``tests/server/test_checks.py``, and over HTTP in
    ``tests/server/test_security.py`` and ``test_auth.py``.
    """

    def __init__(self, app: ASGIApp, settings: ServerSettings, auth: Auth) -> None:
        self.app = app
        self.chain: ASGIApp = SecurityHeaders(
            HostCheck(
                OriginCheck(
                    Authentication(
                        BodySizeLimit(app, settings.max_body_bytes, settings.max_prompt_bytes,
                                      PUBLIC_BODY_BYTES),
                        auth,
                    ),
                    settings.allowed_origins,
                ),
                settings.host_allowlist(),
            )
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.chain(scope, receive, send)


def checks_in_order(middleware: SecurityMiddleware) -> list[Any]:
    """The checks of ``middleware``, outermost first (the app they guard left out)."""
    layers: list[Any] = []
    layer: Any = middleware.chain
    while layer is not middleware.app:
        layers.append(layer)
        layer = layer.app
    return layers
