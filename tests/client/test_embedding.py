"""The library inside other people's programs: each test runs a small host program in a
subprocess (so that its exit, its forks and its signal settings stay its own) and bounds it
with a timeout (a hang guard, not a timing: a hang fails the test)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cursor_agent_api.config import AgentConfig

from .conftest import live_members

PRELUDE = '''
import asyncio, json, os, signal, sys
from cursor_agent_api import AgentConfig, AsyncCursorAgentClient, CursorAgentClient
FIELDS = json.loads(sys.argv[1])
ARGS = sys.argv[2:]
def config(**fields):
    return AgentConfig(**{**FIELDS, **fields})
def agent_pid(client):
    return next(t.pid for t in client._acp.transports.values())
'''


def host(tmp_path: Path, config: AgentConfig, body: str, *args: str,
         timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``body`` (after :data:`PRELUDE`) as a program of its own with ``config``'s fields."""
    script = tmp_path / "host.py"
    script.write_text(PRELUDE + body)
    fields = {"agent_binary": config.agent_binary, "env": config.env,
              "workspace": config.workspace, "trust": True, "kill_grace": config.kill_grace}
    try:
        return subprocess.run([sys.executable, str(script), json.dumps(fields), *args],
                              capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:  # (a hang guard, not a timing)
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        for line in out.splitlines():  # (the agents of the killed host)
            if line.startswith("pid "):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(int(line.split()[1]), signal.SIGKILL)
        pytest.fail(f"the host program hung: stdout={exc.stdout!r} stderr={exc.stderr!r}")


def pids_gone(stdout: str) -> None:
    """Every ``pid N`` line the host printed names a process group that is gone."""
    for line in stdout.splitlines():
        if line.startswith("pid "):
            pgid = int(line.split()[1])
            assert not live_members(pgid), f"the agent's group {pgid} outlived its host"


LOOP_ENDS = '''
async def main():
    asked = asyncio.Event()
    async def can_use_tool(request):
        asked.set()
        await asyncio.Event().wait()  # never answers: the turn runs when the loop ends
    client = AsyncCursorAgentClient(config(transport="acp", can_use_tool=can_use_tool))
    asyncio.ensure_future(client.query("run `ls`"))
    await asked.wait()
    print("pid", agent_pid(client), flush=True)
    if ARGS[0] == "raise":
        raise RuntimeError("the host program failed")
try:
    asyncio.run(main())
    print("returned", flush=True)
except RuntimeError as exc:
    print("raised", exc, flush=True)
'''


@pytest.mark.parametrize("end", ["return", "raise"])
def test_an_acp_query_left_running_ends_with_the_loop(
        sim: Callable[..., AgentConfig], tmp_path: Path, end: str) -> None:
    done = host(tmp_path, sim(), LOOP_ENDS, end)
    said = "returned" if end == "return" else "raised the host program failed"
    assert done.stdout.splitlines()[1:] == [said], done.stderr
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    pids_gone(done.stdout)
