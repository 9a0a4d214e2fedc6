"""The Host check: the ``Host`` header must name this server (what defeats DNS rebinding).

A rebinding page's requests carry its own host name, so a request whose ``Host``
is not a loopback name, the bound address or an ``--allow-host`` is refused with
403, for HTTP and WebSocket alike. The allowlist is
:meth:`ServerSettings.host_allowlist <cursor_agent_api.server.settings.ServerSettings.host_allowlist>`.

Example:
    >>> host_name("127.0.0.1:8765"), host_name("[::1]:80"), host_name("Example.COM")
    ('127.0.0.1', '::1', 'example.com')
"""

from __future__ import annotations

from collections.abc import Iterable

from .asgi import ASGIApp, Receive, Scope, Send, deny, is_request, request_headers


def host_name(host: str) -> str:
    """The name part of a ``Host`` header (no port, no IPv6 brackets), lower-cased."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    if host.count(":") == 1:
        return host.split(":", 1)[0]
    return host


class HostCheck:
    """Refuses (403) a request whose ``Host`` name is not in ``allowed``."""

    def __init__(self, app: ASGIApp, allowed: Iterable[str]) -> None:
        self.app = app
        self.allowed = frozenset(allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if is_request(scope):
            host = request_headers(scope).get("host", "")
            if host_name(host) not in self.allowed:
                await deny(
                    scope,
                    send,
                    403,
                    f"Host {host!r} is not allowed (DNS rebinding "
                    "protection); use http://127.0.0.1 or start with --allow-host",
                )
                return
        await self.app(scope, receive, send)
