"""Issue 11.6: no agent outlives its owner — a consumer killed with SIGKILL or SIGTERM takes
its agent and the agent's shell children with it (Linux: the owner guard)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from cursor_agent_api.runtime.groups import group_members
from cursor_agent_api.runtime.process import OWNER_GUARD

pytestmark = pytest.mark.skipif(not OWNER_GUARD, reason="the owner guard is Linux-only")

CONSUMER = r"""
import asyncio, json, sys, threading
from cursor_agent_api import AgentConfig, AsyncCursorAgentClient, CursorAgentClient, EventType

spec = json.loads(sys.argv[1])
config = AgentConfig(**spec["config"])
PROMPT = "run `sleep 300`"

def started(pid):
    print(pid, flush=True)

if spec["flavour"] == "sync":
    with CursorAgentClient(config) as client, client.query_stream(PROMPT) as stream:
        for event in stream:
            if event.type is EventType.TOOL_CALL_STARTED:
                started(stream.pid)
else:
    async def main():
        stream = AsyncCursorAgentClient(config).query_stream(PROMPT)
        async for event in stream:
            if event.type is EventType.TOOL_CALL_STARTED:
                started(stream.pid)
    # the loop runs in a thread that is not the main thread, as in a server or a notebook
    t = threading.Thread(target=lambda: asyncio.run(main()))
    t.start()
    t.join()
"""


def _wait_for(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_killed_consumer_takes_its_agent_and_shell_child(sim, flavour, sig):
    cfg = sim(force_approve=True, kill_grace=1.0)
    spec = {"flavour": flavour, "config": {
        "agent_binary": cfg.agent_binary, "workspace": cfg.workspace, "env": cfg.env,
        "trust": True, "force_approve": True, "kill_grace": 1.0}}
    consumer = subprocess.Popen([sys.executable, "-c", CONSUMER, json.dumps(spec)],
                                stdout=subprocess.PIPE, text=True, start_new_session=True)
    pgid = None
    try:
        assert consumer.stdout is not None
        line = consumer.stdout.readline()
        assert line.strip().isdigit(), line
        pgid = int(line)
        # the agent and its shell child (sh -c 'sleep 300', in the agent's group) are running
        assert _wait_for(lambda: len(group_members(pgid) or []) >= 2), group_members(pgid)
        members = group_members(pgid)
        os.kill(consumer.pid, sig)
        consumer.wait(timeout=30)
        assert _wait_for(lambda: not group_members(pgid)), \
            f"left behind: {group_members(pgid)} of {members}"
    finally:
        if consumer.poll() is None:
            consumer.kill()
            consumer.wait()
        if pgid is not None and group_members(pgid):
            os.killpg(pgid, signal.SIGKILL)


def _watchers(owner: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if b"watch" in argv and any(a.endswith(b"_guard.py") for a in argv) \
                    and str(owner).encode() in argv:
                found.append(int(entry))
    return found


def test_the_watcher_leaves_with_the_agent(sim, run_query):
    r = run_query(sim(), "What is 6 * 7")
    assert r.success and r.exit_code == 0
    assert _wait_for(lambda: not _watchers(os.getpid())), _watchers(os.getpid())
