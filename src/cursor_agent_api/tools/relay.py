"""The stdio relay: the fallback for a CLI that does not expand ``${env:…}`` in ``mcp.json`` headers.

``python -P -m cursor_agent_api.tools.relay <socket> <token variable>`` is an ``mcp.json``
stdio entry: the agent starts it and speaks MCP on its stdin/stdout; it forwards every
message, both ways, to the host process's tool server over the Unix socket ``<socket>``
(streamable HTTP over the socket, the official SDK on both sides), with ``Authorization:
Bearer <token>``. The token is the value of the environment variable named by the second
argument, which the relay inherits from the agent that started it: only the agent of one of
this client's turns has it (``.cursor/mcp.json`` is shared by every client's turns in the
workspace, so another client's agent may start this entry too — and gets 401). Neither the
file nor argv holds the token. The socket lives in a private directory (0700) and is 0600. The
host switches to the relay with ``CURSOR_AGENT_API_TOOLS_TRANSPORT=relay`` (see docs/tools.md).

The agent starts a stdio server in its own cwd, the workspace (MCP.md §2), and ``python -m``
puts the cwd first on ``sys.path``: a repository's ``anyio.py`` would run in the relay. So the
entry starts Python with ``-P`` (3.11+: no cwd on ``sys.path``), or on 3.10 with a ``-c`` line
that drops the cwd (``''``) from ``sys.path`` before it imports anything.

Example:
    >>> relay_entry("/run/x/mcp.sock", "CURSOR_AGENT_API_TOOLS_TOKEN_AB12")["args"][-2:]
    ['/run/x/mcp.sock', 'CURSOR_AGENT_API_TOOLS_TOKEN_AB12']
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["main", "relay_entry"]

SAFE_PATH_ARGS = ["-P", "-m", "cursor_agent_api.tools.relay"]
"""How the relay is started on Python 3.11+ (``-P``: the cwd is not put on ``sys.path``)."""

DROP_CWD_ARGS = ["-c", "import sys; del sys.path[0]; from cursor_agent_api.tools.relay import main; "
                 "sys.exit(main())"]
"""How it is started on 3.10, which has no ``-P``: with ``-c``, ``sys.path[0]`` is the cwd (``''``)."""


def relay_entry(socket_path: str, token_env: str) -> dict[str, Any]:
    """The ``mcp.json`` entry that starts the relay for ``socket_path`` with this Python; the
    token is read from the relay's environment variable ``token_env`` (its name is no secret)."""
    args = SAFE_PATH_ARGS if sys.version_info >= (3, 11) else DROP_CWD_ARGS
    return {"command": sys.executable, "args": [*args, socket_path, token_env]}


async def _pump(source: Any, sink: Any) -> None:
    async for message in source:
        if not isinstance(message, Exception):
            await sink.send(message)


async def relay(socket_path: str, token: str) -> None:
    """Forward MCP between this process's stdio and the tool server at ``socket_path``."""
    import anyio
    import httpx2
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.stdio import stdio_server

    from .mcp_scopes import SCOPE_ENV, SCOPE_HEADER
    from .server import MAX_RESULT_BYTES, RELAY_AUTHORITY, RESULT_EVENT_MARGIN

    transport = httpx2.AsyncHTTPTransport(uds=socket_path)
    url = f"http://{RELAY_AUTHORITY}/mcp"
    headers = {"Authorization": f"Bearer {token}"}
    if os.environ.get(SCOPE_ENV):  # the turn's (print mode: the agent's environment)
        headers[SCOPE_HEADER] = os.environ[SCOPE_ENV]
    largest = MAX_RESULT_BYTES + RESULT_EVENT_MARGIN  # (the SDK's default: 1 MiB)
    async with stdio_server() as (from_agent, to_agent):
        try:
            async with httpx2.AsyncClient(transport=transport, trust_env=False, headers=headers,
                                          timeout=httpx2.Timeout(30, read=None)) as http, \
                    streamable_http_client(url, http_client=http, max_sse_event_size=largest
                                           ) as (from_host, to_host), \
                    anyio.create_task_group() as group:
                group.start_soon(_pump, from_host, to_agent)
                await _pump(from_agent, to_host)  # the agent closed stdin: done
                group.cancel_scope.cancel()
        finally:
            await to_agent.aclose()  # else stdio_server waits for more to write, for ever


def main(argv: list[str] | None = None) -> int:
    """Run the relay (``argv``: the socket's path, the name of the token's variable)."""
    import anyio

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -P -m cursor_agent_api.tools.relay <socket path> <token variable>",
              file=sys.stderr)
        return 2
    token = os.environ.get(args[1])
    if not token:
        print(f"cursor_agent_api.tools.relay: ${args[1]} is not set: only the agent of a turn of the "
              "client that owns this tool server may start its relay", file=sys.stderr)
        return 2
    try:
        anyio.run(relay, args[0], token)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
