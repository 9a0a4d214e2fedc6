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
from cursor_agent_api.runtime import process as process_module

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
    with subprocess.Popen([sys.executable, str(script), json.dumps(fields), *args],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)  # (a hang guard, not a timing)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the host and its forked children
            out, err = proc.communicate()
            for line in out.splitlines():  # (and their agents, in groups of their own)
                if line.startswith("pid "):
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(int(line.split()[1]), signal.SIGKILL)
            pytest.fail(f"the host program hung: stdout={out!r} stderr={err!r}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


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


NEVER_CLOSED = '''
if ARGS[0] == "session":
    from cursor_agent_api import ConversationSession
    session = ConversationSession(config(transport="acp"))
    print(session.send("what is 2 + 2?").result, flush=True)
    print("pid", agent_pid(session.client), flush=True)
else:
    client = CursorAgentClient(config(transport="acp"))
    print(client.query("what is 2 + 2?").result, flush=True)
    print("pid", agent_pid(client), flush=True)
print("leaving", flush=True)
'''


@pytest.mark.parametrize("kind", ["client", "session"])
def test_an_acp_client_never_closed_does_not_block_exit(
        sim: Callable[..., AgentConfig], tmp_path: Path, kind: str) -> None:
    done = host(tmp_path, sim(), NEVER_CLOSED, kind)
    assert done.stdout.splitlines()[::2] == ["4", "leaving"], done.stderr
    assert (done.returncode, done.stderr) == (0, "")
    pids_gone(done.stdout)


FORKED = '''
client = CursorAgentClient(config(transport=ARGS[0]))
print(client.query("what is 1 + 1?").result, flush=True)
child = os.fork()
if child == 0:
    try:
        client.query("what is 2 + 2?", timeout=5)
    except RuntimeError as exc:
        print("child:", exc, flush=True)
    with client:  # closing it in the child neither waits nor stops the parent's agent
        pass
    os._exit(0)
os.waitpid(child, 0)
print(client.query("what is 3 + 3?").result, flush=True)
client.close()
'''


@pytest.mark.parametrize("transport", ["print", "acp"])
def test_a_client_used_before_a_fork_says_so_in_the_child(
        sim: Callable[..., AgentConfig], tmp_path: Path, transport: str) -> None:
    done = host(tmp_path, sim(), FORKED, transport)
    assert done.stdout.splitlines() == [
        "2",
        "child: the sync client's event-loop thread is gone: the interpreter is exiting, or "
        "this process was forked after the client was used (its agent, turns and tool server "
        "are the parent's): make a new client in the child",
        "6"], done.stderr
    assert done.returncode == 0, done.stderr


REENTRANT = '''
from cursor_agent_api.permissions import Allow
async def can_use_tool(request):
    try:
        client.query("is `ls` safe?", timeout=5)
    except RuntimeError as exc:
        print("callback:", exc, flush=True)
    return Allow()
client = CursorAgentClient(config(transport="acp", can_use_tool=can_use_tool))
print(client.query("run `ls`").success, flush=True)
client.close()
'''


def test_the_sync_client_called_from_its_own_loop_thread_refuses(
        sim: Callable[..., AgentConfig], tmp_path: Path) -> None:
    done = host(tmp_path, sim(), REENTRANT)
    assert done.stdout.splitlines() == [
        "callback: a sync call from the loop thread of cursor-agent-api's sync client (say, in "
        "an async callback) would wait for itself for ever: use AsyncCursorAgentClient there, "
        "or call the sync client from another thread",
        "True"], done.stderr
    assert done.returncode == 0, done.stderr


SIGCHLD_IGNORED = '''
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # a daemon's idiom: the kernel reaps children
from cursor_agent_api import AgentStartError
try:
    CursorAgentClient(config(transport=ARGS[0])).query("what is 2 + 2?")
except AgentStartError as exc:
    print(exc, flush=True)
'''


@pytest.mark.parametrize("transport", ["print", "acp"])
def test_a_host_ignoring_sigchld_is_told_why_no_agent_starts(
        sim: Callable[..., AgentConfig], tmp_path: Path, transport: str) -> None:
    done = host(tmp_path, sim(), SIGCHLD_IGNORED, transport)
    assert done.stdout.splitlines() == [
        "cannot start the agent: this process ignores SIGCHLD (signal.SIG_IGN), so the kernel "
        "reaps the agent before its exit status can be read — restore it before starting the "
        "agent: signal.signal(signal.SIGCHLD, signal.SIG_DFL)"], done.stderr
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.skipif(not process_module._guard_available(), reason="the owner guard is Linux-only")
def test_the_guard_starts_the_agent_with_sigchld_at_its_default() -> None:
    # started with SIGCHLD ignored (kept across exec), the guard's own waitpid failed (ECHILD)
    # and so did the start; the agent would have inherited it (its own children auto-reaped)
    status_r, status_w = os.pipe()
    agent = [sys.executable, "-c", "import signal; print(int(signal.getsignal(signal.SIGCHLD)))"]
    try:
        done = subprocess.run(
            [*process_module._guard_prefix(1.0, status_w), *agent], pass_fds=(status_w,),
            preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN),
            capture_output=True, text=True, timeout=60, check=False)  # (a hang guard)
        os.close(status_w)
        report = os.read(status_r, 64)
    finally:
        os.close(status_r)
    assert (report, done.returncode, done.stdout) == (b"", 0, f"{int(signal.SIG_DFL)}\n"), done.stderr


FORK_EXITS = '''
tools = None
if ARGS[1] == "tools":
    from cursor_agent_api.tools import tool
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b
    tools = [add]
SLOW = {"CURSOR_AGENT_SIM_FAULT": "slow", "CURSOR_AGENT_SIM_DELAY": "0.1"}
client = CursorAgentClient(config(transport=ARGS[0], force_approve=True), tools=tools)
stream = client.query_stream("list the files", env=SLOW)
events = iter(stream)
next(events)  # the turn runs (its agent, its tool server injected in the workspace)
mcp_json = os.path.join(FIELDS["workspace"], ".cursor", "mcp.json")
held = os.path.exists(mcp_json)
child = os.fork()
if child == 0:
    sys.exit(0)  # a helper that ends normally: its exit handlers run
os.waitpid(child, 0)
print("injected", held, os.path.exists(mcp_json), flush=True)
list(events)
print("turn", stream.result.success, stream.result.error, flush=True)
client.close()
'''


@pytest.mark.parametrize(("transport", "tools"), [("print", ""), ("acp", ""), ("print", "tools")])
def test_a_forked_child_exiting_leaves_the_parents_turns_alone(
        sim: Callable[..., AgentConfig], tmp_path: Path, transport: str, tools: str) -> None:
    if tools:
        pytest.importorskip("mcp")
    done = host(tmp_path, sim(), FORK_EXITS, transport, tools or "none")
    injected = "injected True True" if tools else "injected False False"
    assert done.stdout.splitlines() == [injected, "turn True None"], done.stderr
    assert done.returncode == 0, done.stderr


FORK_WHILE_HELD_LOCKED = '''
import threading
from cursor_agent_api.tools.journal import HELD
class Holder:
    def exit(self):
        pass
holder = Holder()
HELD.hold(holder)
taken, fork_now = threading.Event(), threading.Event()
def busy():  # another thread of the host, inside the registry's lock when the fork comes
    with HELD._lock:
        taken.set()
        fork_now.wait()
thread = threading.Thread(target=busy)
thread.start()
taken.wait()
child = os.fork()
if child == 0:
    HELD.hold(Holder())  # the child's own (a turn with tools): the lock is its own
    sys.exit(0)  # a normal exit: the registry is released at exit
fork_now.set()
thread.join()
print("child", os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]), flush=True)
'''


def test_a_fork_while_another_thread_holds_the_at_exit_registry_does_not_hang_the_child(
        tmp_path: Path) -> None:
    done = host(tmp_path, AgentConfig(), FORK_WHILE_HELD_LOCKED, timeout=30)
    assert done.stdout.splitlines() == ["child 0"], done.stderr
