"""The stdio relay: the fallback for a CLI that does not expand ``${env:…}`` in ``mcp.json`` headers.

``python -m cursor_agent_api.tools.relay <socket>`` is an ``mcp.json`` stdio entry: the agent
starts it and speaks MCP on its stdin/stdout; it forwards every message, both ways, to the host
process's tool server over the Unix socket ``<socket>`` (streamable HTTP over the socket, the
official SDK on both sides). The socket lives in a private directory (0700) and is 0600, so
only the user's own processes reach it, and no token is needed: nothing secret is in the
entry, the file or argv. The host switches to it with
``CURSOR_AGENT_API_TOOLS_TRANSPORT=relay`` (see docs/tools.md).

Example:
    >>> relay_entry("/run/x/mcp.sock")["args"][-2:]
    ['cursor_agent_api.tools.relay', '/run/x/mcp.sock']
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["main", "relay_entry"]


def relay_entry(socket_path: str) -> dict[str, Any]:
    """The ``mcp.json`` entry that starts the relay for ``socket_path`` with this Python."""
    return {"command": sys.executable, "args": ["-m", "cursor_agent_api.tools.relay", socket_path]}


async def _pump(source: Any, sink: Any) -> None:
    async for message in source:
        if not isinstance(message, Exception):
            await sink.send(message)


async def relay(socket_path: str) -> None:
    """Forward MCP between this process's stdio and the tool server at ``socket_path``."""
    import anyio
    import httpx2
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.stdio import stdio_server

    from .server import RELAY_AUTHORITY

    transport = httpx2.AsyncHTTPTransport(uds=socket_path)
    url = f"http://{RELAY_AUTHORITY}/mcp"
    async with stdio_server() as (from_agent, to_agent):
        try:
            async with httpx2.AsyncClient(transport=transport, trust_env=False,
                                          timeout=httpx2.Timeout(30, read=None)) as http, \
                    streamable_http_client(url, http_client=http) as (from_host, to_host), \
                    anyio.create_task_group() as group:
                group.start_soon(_pump, from_host, to_agent)
                await _pump(from_agent, to_host)  # the agent closed stdin: done
                group.cancel_scope.cancel()
        finally:
            await to_agent.aclose()  # else stdio_server waits for more to write, for ever


def main(argv: list[str] | None = None) -> int:
    """Run the relay (``argv``: the socket's path)."""
    import anyio

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m cursor_agent_api.tools.relay <socket path>", file=sys.stderr)
        return 2
    try:
        anyio.run(relay, args[0])
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
