"""A client with tools that is never closed: its tool server goes quietly when its event loop
ends (``asyncio.run`` cancels it: no traceback), and one dropped without ``aclose()`` stops
its tool server at once (``weakref.finalize``), as the sync client's ``__del__`` closes it."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import AsyncCursorAgentClient
from cursor_agent_api import client as client_module

from .conftest import lookup_order

UNCLOSED = '''
import asyncio, json, sys
from cursor_agent_api import AsyncCursorAgentClient
from cursor_agent_api.tools import tool

@tool
def lookup_order(order_id: str) -> dict:
    """Look up an order."""
    return {"id": order_id, "status": "shipped"}

KEPT = []

async def main():
    client = AsyncCursorAgentClient(**json.loads(sys.argv[1]), trust=True, tools=[lookup_order])
    KEPT.append(client)  # never closed, still referenced when the loop ends
    result = await client.query('lookup_order {"order_id": "A1"}')
    print("result", result.success, flush=True)

asyncio.run(main())
print("end", flush=True)
'''


def test_a_tool_server_left_running_ends_quietly_with_its_loop(
        sim: Callable[..., Any], cursor_sim_workspace: Path, tmp_path: Path) -> None:
    config = sim()
    script = tmp_path / "unclosed.py"
    script.write_text(UNCLOSED)
    fields = {"agent_binary": config.agent_binary, "env": config.env,
              "workspace": config.workspace}
    done = subprocess.run([sys.executable, str(script), json.dumps(fields)], capture_output=True,
                          text=True, timeout=120, check=False)  # (a hang guard, not a timing)
    assert (done.returncode, done.stdout) == (0, "result True\nend\n"), done.stderr
    assert "Traceback" not in done.stderr, done.stderr  # (starlette's lifespan: CancelledError)


def test_a_dropped_client_stops_its_tool_server(sim: Callable[..., Any], workspace: Path) -> None:
    async def main() -> tuple[bool, bool, bool]:
        client = AsyncCursorAgentClient(sim(), tools=[lookup_order])
        assert (await client.query('lookup_order {"order_id": "A1"}')).success
        server = client._tools.server
        running = server.running
        dropped = weakref.ref(client)
        del client
        gc.collect()
        await asyncio.gather(*getattr(client_module, "_LETTING_GO", ()))
        return running, dropped() is None, server.running

    assert asyncio.run(main()) == (True, True, False)  # (True, True, True: kept till the loop's end)


RELAY_UNCLOSED = '''
import asyncio, json, sys
from cursor_agent_api import AsyncCursorAgentClient, CursorAgentClient
from cursor_agent_api.tools import tool

@tool
def lookup_order(order_id: str) -> dict:
    """Look up an order."""
    return {"id": order_id, "status": "shipped"}

fields = dict(json.loads(sys.argv[1]), trust=True, tools=[lookup_order])
KEPT = []
if sys.argv[2] == "async":
    async def main():
        client = AsyncCursorAgentClient(**fields)  # no aclose()
        KEPT.append(client)
        print("result", (await client.query('lookup_order {"order_id": "A1"}')).success, flush=True)
    asyncio.run(main())
else:
    client = CursorAgentClient(**fields)  # no close()
    print("result", client.query('lookup_order {"order_id": "A1"}').success, flush=True)
'''


@pytest.mark.parametrize("face", ["async", "sync"])
def test_the_relay_socket_directory_goes_at_exit(sim: Callable[..., Any], cursor_sim_workspace: Path,
                                                 tmp_path: Path, request: pytest.FixtureRequest,
                                                 face: str) -> None:
    """The relay's private directory (``cursor-agent-api-tools-*/mcp.sock`` in ``$TMPDIR``) of a
    client never closed is removed when the interpreter exits (one was left per run)."""
    config = sim()
    script = tmp_path / "relay_unclosed.py"
    script.write_text(RELAY_UNCLOSED)
    temp = Path(tempfile.mkdtemp(prefix="caa-"))  # short: a socket's path may have 103 bytes
    request.addfinalizer(lambda: shutil.rmtree(temp, ignore_errors=True))
    fields = {"agent_binary": config.agent_binary, "env": config.env, "workspace": config.workspace}
    env = {**os.environ, "TMPDIR": str(temp), "CURSOR_AGENT_API_TOOLS_TRANSPORT": "relay"}
    done = subprocess.run([sys.executable, str(script), json.dumps(fields), face], capture_output=True,
                          text=True, timeout=120, check=False, env=env)  # (a hang guard, not a timing)
    assert (done.returncode, done.stdout) == (0, "result True\n"), done.stderr
    assert list(temp.iterdir()) == []
