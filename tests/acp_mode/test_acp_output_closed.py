"""ACP mode: an ``agent acp`` that closes stdout and stderr mid-turn and lives on (audit 4).
The connection is over: the turn fails at once with an ``AgentProcessError`` saying so (not
stuck), and the useless process's group is stopped then, not kept until the client closes."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from cursor_agent_api import AgentProcessError, AsyncCursorAgentClient
from cursor_agent_api.config import AgentConfig
from cursor_agent_api.runtime import groups

CLOSER = """\
import json, os, sys, time
for line in sys.stdin:
    m = json.loads(line)
    method = m.get("method")
    if method == "session/prompt":
        os.close(1)
        os.close(2)
        time.sleep(20)
        sys.exit(0)
    result = {"protocolVersion": 1, "agentCapabilities": {}} if method == "initialize" else \\
        {"sessionId": "0ed36493-01b3-4744-b712-a8eabfff89e1"} if method == "session/new" else {}
    if "id" in m:
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": result}), flush=True)
"""


def test_an_acp_agent_closing_its_output_ends_the_turn_and_is_stopped(
    tmp_path: Path, spawned: list[int]
) -> None:
    agent = tmp_path / "closer_acp"
    agent.write_text(f"#!{sys.executable}\n{CLOSER}")
    agent.chmod(0o755)
    config = AgentConfig(agent_binary=str(agent), transport="acp", workspace=str(tmp_path),
                         kill_grace=0.5)

    async def main() -> tuple[object, bool]:
        client = AsyncCursorAgentClient(config)
        try:
            result = await client.query("hi")
            # the group is stopped without the client's close (bounded: the agent sleeps 20 s)
            deadline = time.monotonic() + 15
            while any(groups.group_alive(p) for p in spawned) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            return result, any(groups.group_alive(p) for p in spawned)
        finally:
            await client.aclose()

    result, alive = asyncio.run(main())
    assert isinstance(result.exception, AgentProcessError)  # type: ignore[attr-defined]
    assert "closed its output before answering session/prompt" in str(result.exception)  # type: ignore[attr-defined]
    assert spawned and not alive, "the agent's group outlived its connection"
