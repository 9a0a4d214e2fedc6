"""A host process killed mid-turn (SIGKILL) leaves its entries in ``.cursor``; the next turn on
this machine puts the directory back exactly as it was."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cursor_agent_api import CursorAgentClient
from cursor_agent_api.runtime.groups import start_time

from .conftest import tree_hash

CHILD = textwrap.dedent("""
    import json, sys
    from cursor_agent_api import AgentConfig, CursorAgentClient
    from cursor_agent_api.tools import tool

    @tool
    def ping() -> str:
        '''Answer pong.'''
        return "pong"

    config = AgentConfig(**json.loads(sys.argv[1]))
    client = CursorAgentClient(config, tools=[ping])
    stream = client.query_stream("ping")
    next(iter(stream))              # the agent runs: the entries are in .cursor
    print(stream.pid, flush=True)
    sys.stdin.read()                # until killed
""")


def _wait_gone(pid: int) -> None:
    for _ in range(600):  # the owner guard stops the orphaned agent; bounded, not timed
        if start_time(pid) is None:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)


def test_killed_host_is_cleaned_at_the_next_start(sim: Callable[..., Any], workspace: Path) -> None:
    before = tree_hash(workspace / ".cursor")
    config = sim("silence")
    fields = {"workspace": config.workspace, "agent_binary": config.agent_binary, "trust": True,
              "env": config.env, "kill_grace": 1.0}
    child = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(fields)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None
        agent_pid = int(child.stdout.readline())
        during = tree_hash(workspace / ".cursor")
        assert during != before
        child.send_signal(signal.SIGKILL)
        child.wait()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    _wait_gone(agent_pid)
    assert tree_hash(workspace / ".cursor") == during  # nobody restored it yet
    with CursorAgentClient(sim()) as client:  # any turn with mcp_servers or tools sweeps
        result = client.query("What is 2+2?", mcp_servers={"x": {"url": "http://127.0.0.1:9/mcp"}})
    assert result.success
    assert tree_hash(workspace / ".cursor") == before
