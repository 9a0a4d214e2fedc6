"""An SSE-only MCP server (the legacy HTTP+SSE transport, the official SDK's ``sse_app``) for the
tests: tool ``sse_ping``. It binds a free port on 127.0.0.1 itself and prints it, then serves."""

import os
import socket

import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("sse-demo")


@server.tool()
def sse_ping() -> str:
    """Answer pong."""
    return "pong-over-sse"


def main() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # the port was the only output
    uvicorn.Server(uvicorn.Config(server.sse_app(), log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":  # pytest's doctest collection imports this file: it must not serve
    main()
