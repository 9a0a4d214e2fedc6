"""An agent that cannot start says why, with the same typed error with the owner guard or
without it, in print mode and ACP mode: a missing or non-executable binary is
``AgentNotFoundError`` ("install the Cursor CLI"); a system out of open files, processes or
memory is ``AgentStartError`` naming the limit — not "install the Cursor CLI", which the
user has (or is simulating)."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from cursor_agent_api import AgentNotFoundError, AgentStartError, CursorAgentClient
from cursor_agent_api.runtime import process as process_module

from .conftest import live_members

GUARD = [True, False] if process_module.OWNER_GUARD else [False]


@pytest.fixture(params=GUARD, ids=lambda on: "guard" if on else "no-guard")
def guard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    monkeypatch.setattr(process_module, "OWNER_GUARD", request.param)
    return bool(request.param)


def _failing_exec(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    """Make every spawn fail as the kernel would, with ``code``."""

    async def subprocess_exec(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(asyncio.AbstractEventLoop, "subprocess_exec", subprocess_exec)
    monkeypatch.setattr(asyncio.BaseEventLoop, "subprocess_exec", subprocess_exec)


@pytest.mark.parametrize("transport", ["print", "acp"])
@pytest.mark.parametrize("code, limit", [
    (errno.EMFILE, "ulimit -n"), (errno.ENFILE, "fs.file-max"),
    (errno.EAGAIN, "ulimit -u"), (errno.ENOMEM, "memory")],
    ids=["EMFILE", "ENFILE", "EAGAIN", "ENOMEM"])
def test_out_of_resources_is_not_a_missing_agent(sim, monkeypatch, transport, code, limit):
    _failing_exec(monkeypatch, code)
    with CursorAgentClient(sim(transport=transport)) as client, \
            pytest.raises(AgentStartError) as caught:
        client.query("hi")
    err = caught.value
    assert not isinstance(err, AgentNotFoundError)
    assert err.errno == code
    assert errno.errorcode[code] in str(err) and limit in str(err)
    assert "install" not in str(err) and "--simulate" not in err.cli_message()


@pytest.mark.parametrize("code", [errno.ENOENT, errno.EACCES, errno.ENOEXEC],
                         ids=["ENOENT", "EACCES", "ENOEXEC"])
def test_a_binary_that_cannot_run_is_still_not_found(sim, monkeypatch, code):
    _failing_exec(monkeypatch, code)
    with CursorAgentClient(sim()) as client, pytest.raises(AgentNotFoundError, match="install"):
        client.query("hi")


@pytest.mark.parametrize("transport", ["print", "acp"])
def test_not_executable_raises_the_same_with_the_guard_or_without(sim, guard, transport,
                                                                  tmp_path):
    binary = tmp_path / "agent"
    binary.write_text("echo this has no #! line\n")  # exec fails with ENOEXEC
    binary.chmod(0o755)
    with CursorAgentClient(sim(agent_binary=str(binary), transport=transport)) as client, \
            pytest.raises(AgentNotFoundError, match="is not executable") as caught:
        client.query("hi")
    assert caught.value.errno == errno.ENOEXEC
    assert caught.value.exit_code is None  # nothing ran: no agent exit to report


OUT_OF_FDS = r"""
import json, os, resource, sys
from cursor_agent_api import AgentConfig, CursorAgentClient, CursorAgentError
config = AgentConfig(**json.loads(sys.argv[1]))
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
with CursorAgentClient(config) as client:
    assert client.query("hi").success  # the client's loop and threads are up
    held = []
    try:
        while True:
            held.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass
    out = ["ran"]
    try:
        client.query("hi", api_key="other")  # a new agent process, in ACP mode too
    except CursorAgentError as exc:
        out = [type(exc).__name__, exc.errno, str(exc)]
    for fd in held:
        os.close(fd)
    print(json.dumps(out))
"""


@pytest.mark.parametrize("transport", ["print", "acp"])
def test_a_process_out_of_file_descriptors(sim, transport):
    cfg = sim(transport=transport)
    spec = {"agent_binary": cfg.agent_binary, "workspace": cfg.workspace, "env": cfg.env,
            "trust": True, "transport": transport}
    proc = subprocess.run([sys.executable, "-c", OUT_OF_FDS, json.dumps(spec)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    name, code, message = [*json.loads(proc.stdout.splitlines()[-1]), None, None][:3]
    assert (name, code) == ("AgentStartError", errno.EMFILE), message
    assert "ulimit -n" in message and "install" not in message


# ---- the owner guard's own failures, reported on its status pipe ------------------------

GUARD_WITHOUT_FORK = r"""
import errno, os, sys
from importlib.machinery import SourceFileLoader
from types import ModuleType
guard = ModuleType("_guard")
loader = SourceFileLoader("_guard", sys.argv[1])
guard.__file__ = loader.path
loader.exec_module(guard)

def no_fork():
    raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN))

os.fork = no_fork
status = int(sys.argv[2])
guard.run(str(os.getppid()), "0", "1", str(status), ["sh", "-c", "echo the agent ran"])
"""


@pytest.mark.skipif(not process_module.OWNER_GUARD, reason="the owner guard is Linux-only")
def test_the_guard_reports_a_watcher_it_cannot_fork_and_runs_no_agent():
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.run([sys.executable, "-c", GUARD_WITHOUT_FORK,
                               process_module._GUARD_SCRIPT, str(write_fd)],
                              capture_output=True, text=True, timeout=60, check=False,
                              pass_fds=(write_fd,))
        os.close(write_fd)
        write_fd = -1
        with os.fdopen(read_fd, "rb") as status:
            read_fd = -1
            report = status.read()
    finally:
        for fd in (read_fd, write_fd):
            if fd >= 0:
                os.close(fd)
    assert (proc.returncode, proc.stdout, proc.stderr) == (127, "", "")
    assert report == f"watch {errno.EAGAIN}".encode()
    err = process_module._guard_failure("agent", report)
    assert type(err) is AgentStartError and err.errno == errno.EAGAIN
    assert "ulimit -u" in str(err)


# ---- no thread left to wait for the child (Python 3.11's default child watcher) ----------

def _threaded_watcher() -> bool:
    import warnings

    unix_events = getattr(asyncio, "unix_events", None)
    threaded = getattr(unix_events, "ThreadedChildWatcher", None)
    if threaded is None:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return isinstance(asyncio.get_child_watcher(), threaded)


@pytest.mark.skipif(not _threaded_watcher(), reason="this asyncio waits for children without "
                    "a thread of its own per child")
@pytest.mark.parametrize("transport", ["print", "acp"])
def test_no_thread_to_wait_for_the_agent(sim, guard, transport, monkeypatch):
    started: list[int] = []

    def add_child_handler(self: Any, pid: int, *args: Any) -> None:
        started.append(pid)
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(asyncio.unix_events.ThreadedChildWatcher,  # type: ignore[attr-defined]
                        "add_child_handler", add_child_handler)
    with CursorAgentClient(sim(transport=transport)) as client, \
            pytest.raises(AgentStartError, match="ulimit -u") as caught:
        client.query("hi")
    assert caught.value.errno == errno.EAGAIN
    (pid,) = started
    with pytest.raises(ChildProcessError):  # killed and reaped, not left running
        os.waitpid(pid, os.WNOHANG)
    # nothing alive is left in its group. (Not ``killpg(pid, 0)``: the SIGKILL can land while
    # the guard starts its watcher, after its intermediate process exited and before the guard
    # reaped it; that zombie, orphaned, stays in the group where PID 1 reaps no orphans, as
    # in this sandbox: a stress run of tests/client failed so, once in 24.)
    assert live_members(pid) == []
