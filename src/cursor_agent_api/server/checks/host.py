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

import re
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


_PORT = re.compile(r"[0-9]{1,5}")


def host_port(host: str) -> int | None:
    """The port a ``Host`` header names (the one in the browser's address), or ``None`` when it
    names none, or none that is a port.

    Example:
        >>> host_port("127.0.0.1:19765"), host_port("[::1]:80"), host_port("example.com")
        (19765, 80, None)
        >>> host_port("127.0.0.1:99999"), host_port("127.0.0.1:8x"), host_port("::1")
        (None, None, None)
    """
    host = host.strip()
    if host.startswith("["):
        port = host.partition("]")[2]
    elif host.count(":") == 1:
        port = host[host.find(":"):]
    else:
        return None
    if not port.startswith(":") or not _PORT.fullmatch(port[1:]):
        return None
    number = int(port[1:])
    return number if 0 < number < 65536 else None


_NAME = re.compile(r"[a-z0-9.-]+|\[[0-9a-f:.]+\]")


def host_origin(host: str | None) -> str | None:
    """``name[:port]`` of a ``Host`` header that is just that (a DNS name or an IP address, a
    valid port), rebuilt from its parts and lower-cased; ``None`` for anything else.

    Example:
        >>> host_origin("Agent.LAN:8080"), host_origin("[::1]"), host_origin("127.0.0.1:19765")
        ('agent.lan:8080', '[::1]', '127.0.0.1:19765')
        >>> host_origin("a.lan:1@evil.example"), host_origin("a.lan:99999"), host_origin(None)
        (None, None, None)
    """
    if not host:
        return None
    host = host.strip().lower()
    name, sep, port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
    if not sep:
        name = host
    elif host_port(host) is None:
        return None
    if not _NAME.fullmatch(name):
        return None
    return f"{name}:{port}" if sep else name


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
                    code="host_not_allowed",
                )
                return
        await self.app(scope, receive, send)
