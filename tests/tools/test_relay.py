"""The stdio relay forwards MCP to the host over the Unix socket, and exits when the agent
closes its stdin (it used to stay, orphaned, once the agent was gone)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile

from cursor_agent_api.tools.server import ToolServer

from .conftest import TOOLS

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "Cursor", "version": "1.0.0"}}}


def test_relay_answers_then_exits_at_end_of_input() -> None:
    async def main() -> tuple[bytes, int | None]:
        path = os.path.join(tempfile.mkdtemp(), "mcp.sock")
        server = ToolServer(TOOLS)
        await server.start(path)
        assert oct(os.stat(path).st_mode & 0o777) == "0o600"
        relay = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "cursor_agent_api.tools.relay", path,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        try:
            assert relay.stdin is not None and relay.stdout is not None
            relay.stdin.write(json.dumps(INIT).encode() + b"\n")
            await relay.stdin.drain()
            answer = await asyncio.wait_for(relay.stdout.readline(), 60)
            relay.stdin.close()
            await asyncio.wait_for(relay.wait(), 60)  # a bound, not a timing
            return answer, relay.returncode
        finally:
            if relay.returncode is None:
                relay.kill()
                await relay.wait()
            await server.stop()

    answer, code = asyncio.run(main())
    assert json.loads(answer)["result"]["serverInfo"]["name"] == "python-tools"
    assert code == 0
