"""Fixtures of the client tests: simulator configs, and a check that no process outlives its test.

Every agent process the runtime starts goes through ``AgentProcess.spawn``; the autouse
fixture records each one's process group (the agent's pgid is its pid) and, after the
test, asserts that no live process is left in any of them and that this process has no
unreaped (zombie) child. The check reads ``/proc`` itself, independently of the code
under test. (Zombies whose parent is PID 1 are ignored: in this sandbox PID 1 does not
reap orphans, and such a process is dead already.)
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cursor_agent_api.config import AgentConfig
from cursor_agent_api.runtime import process as process_module


def _proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, pgrp) of ``pid`` from /proc, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    rest = stat[stat.rfind(b")") + 2 :].split()
    return rest[0].decode(), int(rest[1]), int(rest[2])


def live_members(pgid: int) -> list[tuple[int, str]]:
    """Live (non-zombie) processes of group ``pgid``, and zombies that are our own children."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return []
    found = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        st = _proc_stat(int(entry))
        if st is None or st[2] != pgid:
            continue
        state, ppid, _ = st
        if state in ("Z", "X") and ppid != me:
            continue  # dead, parented to a non-reaping init
        found.append((int(entry), state))
    return found


def our_zombies() -> list[int]:
    """Zombie children of this test process (nobody reaped them)."""
    me = os.getpid()
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _proc_stat(int(entry))
            if st is not None and st[1] == me and st[0] == "Z":
                out.append(int(entry))
    return out


HANG_REPORT_AFTER = 100.0
"""Seconds into a test after which :func:`spawned` writes what its agents are doing to stderr:
before pytest-timeout's 120 s, so that a test that hangs says where (its captured stderr is in
its failure's report). CI of 2026-11-26 lost a turn for 120 s with no trace of its state."""


def _describe(pid: int) -> str:
    """``pid``'s state, parent, group and kernel wait channel, from /proc."""
    st = _proc_stat(pid)
    if st is None:
        return f"{pid}: gone"
    try:
        with open(f"/proc/{pid}/wchan") as f:
            wchan = f.read()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")[:160]
    except OSError:
        wchan = cmd = "?"
    return f"{pid}: state {st[0]}, ppid {st[1]}, pgrp {st[2]}, wchan {wchan!r}: {cmd}"


def _report_hang(procs: list[Any]) -> None:
    """Write the state of each agent of the test (the run's view and the kernel's) and every
    thread's stack to stderr (diagnostics only: it changes nothing)."""
    import faulthandler
    import sys

    lines = [f"=== the test has run {HANG_REPORT_AFTER:g} s: its agents ==="]
    for proc in procs:
        run = getattr(proc.transport.get_protocol(), "listener", None)
        policy = getattr(run, "_policy", None)
        lines.append(
            f"agent {proc.pid}: exited={proc.has_exited} code={proc.exit_code} "
            f"stdout_done={getattr(run, '_stdout_done', '?')} "
            f"stderr_done={getattr(run, '_stderr_done', '?')} paused={getattr(run, '_paused', '?')} "
            f"stop_reason={getattr(run, 'stop_reason', '?')} phase={getattr(policy, 'phase', '?')} "
            f"result={'set' if getattr(run, 'result', None) is not None else None}")
        members = [int(e) for e in os.listdir("/proc") if e.isdigit()
                   and (_proc_stat(int(e)) or ("", 0, 0))[2] == proc.pgid]
        lines += ["  " + _describe(pid) for pid in sorted(set(members) | {proc.pid})]
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)


@pytest.fixture(autouse=True)
def spawned(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The process groups of every agent spawned during the test; checked empty afterwards.
    A test still running after :data:`HANG_REPORT_AFTER` s reports its agents' state."""
    import threading

    groups: list[int] = []
    procs: list[Any] = []
    original = process_module.AgentProcess.spawn.__func__  # type: ignore[attr-defined]

    async def spawn(cls: Any, *args: Any, **kwargs: Any) -> Any:
        proc = await original(cls, *args, **kwargs)
        groups.append(proc.pgid)
        procs.append(proc)
        return proc

    monkeypatch.setattr(process_module.AgentProcess, "spawn", classmethod(spawn))
    watchdog = threading.Timer(HANG_REPORT_AFTER, _report_hang, args=(procs,))
    watchdog.daemon = True
    watchdog.start()
    try:
        yield groups
    finally:
        watchdog.cancel()
    left = {pgid: live_members(pgid) for pgid in groups}
    left = {k: v for k, v in left.items() if v}
    zombies = our_zombies()
    for pgid in left:  # do not leak into the next test
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, 9)
    assert not left, f"processes outlived the test: {left}"
    assert not zombies, f"unreaped children: {zombies}"


@pytest.fixture
def argvs(spawned: list[int], monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The argv of every agent spawned during the test, in order (on top of ``spawned``)."""
    seen: list[list[str]] = []
    original = process_module.AgentProcess.spawn  # ``spawned``'s recorder, already in place

    async def spawn(cls: Any, argv: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(list(argv))
        return await original(argv, *args, **kwargs)

    monkeypatch.setattr(process_module.AgentProcess, "spawn", classmethod(spawn))
    return seen


@pytest.fixture
def sim(make_cursor_sim_config: Callable[..., AgentConfig]) -> Callable[..., AgentConfig]:
    """``sim(fault=None, **fields)``: an AgentConfig running cursor-agent-sim in a fresh
    workspace and config dir, with short graces so the fault tests stay quick."""

    def make(fault: str | list[str] | None = None, **fields: Any) -> AgentConfig:
        # a simulator without a fault exits by itself after its result: its grace costs nothing,
        # and a loaded machine may take over a second to end it (then SIGTERM: exit 143, where
        # a test expects 0; a stress run of tests/client caught it). The faults' stay short.
        fields.setdefault("result_grace", 1.0 if fault else 10.0)
        fields.setdefault("kill_grace", 1.0)
        # under pytest-timeout's 120 s: a turn that never ends by itself fails as a timeout
        fields.setdefault("timeout", 90.0)
        return make_cursor_sim_config(fault=fault, **fields)

    return make


@pytest.fixture(params=["sync", "async"])
def flavour(request: pytest.FixtureRequest) -> str:
    """Run a test once through the sync client and once through the async one."""
    return str(request.param)


class Turn:
    """What a streamed turn produced: the events as iterated, and the result."""

    def __init__(self, events: list[Any], result: Any, pid: int | None) -> None:
        self.events = events
        self.result = result
        self.pid = pid

    def types(self) -> list[str]:
        return [e.type.value for e in self.events]


@pytest.fixture
def run_query(flavour: str) -> Callable[..., Any]:
    """``run_query(config, prompt, **overrides) -> AgentResult`` through the sync or async client."""
    import asyncio

    from cursor_agent_api import AsyncCursorAgentClient, CursorAgentClient

    def run(config: AgentConfig, prompt: str, **overrides: Any) -> Any:
        if flavour == "sync":
            with CursorAgentClient(config) as client:
                return client.query(prompt, **overrides)
        return asyncio.run(AsyncCursorAgentClient(config).query(prompt, **overrides))

    return run


@pytest.fixture
def run_stream(flavour: str) -> Callable[..., Turn]:
    """``run_stream(config, prompt, **overrides) -> Turn``: iterate a whole stream, sync or async."""
    import asyncio

    from cursor_agent_api import AsyncCursorAgentClient, CursorAgentClient

    def run(config: AgentConfig, prompt: str, **overrides: Any) -> Turn:
        if flavour == "sync":
            with CursorAgentClient(config) as client, \
                    client.query_stream(prompt, **overrides) as stream:
                events = list(stream)
                return Turn(events, stream.result, stream.pid)

        async def main() -> Turn:
            stream = AsyncCursorAgentClient(config).query_stream(prompt, **overrides)
            events = [e async for e in stream]
            return Turn(events, stream.result, stream.pid)

        return asyncio.run(main())

    return run
