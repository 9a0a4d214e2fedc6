"""An agent's process group, once gone, is never signalled again: its number may be reused.

Linux does not give a pid to a new process while it is some live process's pgid; once the
agent is reaped and its group empty, the number is free, and a new, unrelated session leader
can get it. Before, :class:`AgentProcess` went on signalling ``pgid`` (``signal``,
``kill_now``, and the interpreter's exit over every process not let go of, such as an ACP
agent that exited by itself): it could SIGTERM or SIGKILL somebody else's processes. Now the
process is *gone* once it is reaped and its group seen empty (at its exit, or whenever it is
looked at), leaves ``_RUNNING``, and nothing is sent to that number any more.

The reuse is simulated: after the real agent is gone, ``group_alive`` says the group lives
(somebody else's now) and ``os.killpg`` records what would have been sent. The ACP path:
``tests/acp_mode/test_acp_group_reuse.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import time
import warnings
from collections.abc import Callable

import pytest

from cursor_agent_api.runtime import groups
from cursor_agent_api.runtime import process as process_module
from cursor_agent_api.runtime.process import AgentProcess

HANG = 30.0
"""Bound of each wait: it only turns a hang into a failure (they end in milliseconds)."""


class _Lines:
    """A listener keeping the agent's stdout."""

    def __init__(self) -> None:
        self.out = b""
        self.line = asyncio.Event()

    def stdout_data(self, data: bytes) -> None:
        self.out += data
        if b"\n" in self.out:
            self.line.set()

    def stdout_eof(self) -> None: ...
    def stderr_data(self, data: bytes) -> None: ...
    def stderr_eof(self) -> None: ...
    def exited(self) -> None: ...


def _reuse(monkeypatch: pytest.MonkeyPatch, pgid: int, *,
           leader_started: Callable[[int | str], int | None] | None = None) -> list[tuple[int, int]]:
    """From now on group ``pgid`` lives again (someone else's); every ``os.killpg`` to it is
    recorded, not sent. With ``leader_started``, the start time of its new leader."""
    sent: list[tuple[int, int]] = []
    real_killpg, real_alive = os.killpg, groups.group_alive

    def killpg(target: int, sig: int) -> None:
        if target != pgid:
            real_killpg(target, sig)
        elif sig != 0:
            sent.append((target, sig))

    def group_alive(target: int) -> bool:
        return True if target == pgid else real_alive(target)

    monkeypatch.setattr(os, "killpg", killpg)
    monkeypatch.setattr(groups, "group_alive", group_alive)
    monkeypatch.setattr(process_module, "group_alive", group_alive)
    if leader_started is not None:
        monkeypatch.setattr(process_module, "live_start_time", leader_started, raising=False)
    return sent


async def _emptied(pgid: int) -> None:
    """Until group ``pgid`` has no live process (asked of /proc, not of the agent)."""
    while groups.group_alive(pgid):
        await asyncio.sleep(0.01)


def _nothing_sent(proc: AgentProcess, sent: list[tuple[int, int]]) -> None:
    """Every way the runtime signals a group leaves the reused one alone."""
    assert not proc.alive()
    assert proc.signal(signal.SIGTERM) is False
    proc.kill_now()
    assert proc not in process_module._RUNNING
    process_module._stop_running_at_exit()
    assert sent == []


def test_an_agent_gone_by_itself_leaves_the_exit_net_and_its_reused_group_is_never_signalled(
        monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        proc = await AgentProcess.spawn(["true"], _Lines(), env=None)
        await asyncio.wait_for(proc.wait(), HANG)
        # nobody looked at it: its exit alone saw the group empty
        assert proc not in process_module._RUNNING
        sent = _reuse(monkeypatch, proc.pgid)
        _nothing_sent(proc, sent)
        assert await proc.wait_gone(0) is True
        await proc.stop(kill_grace=1.0)  # (stop_groups would signal the number)
        assert sent == []
        proc.close()

    asyncio.run(main())


def test_a_group_emptied_after_the_agent_is_gone_once_seen_empty(
        monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        lines = _Lines()
        proc = await AgentProcess.spawn(["sh", "-c", "sleep 600 & echo $!"], lines, env=None)
        await asyncio.wait_for(lines.line.wait(), HANG)
        child = int(lines.out.split()[0])
        await asyncio.wait_for(proc.wait(), HANG)
        try:
            assert proc.alive() and proc in process_module._RUNNING  # its child is left
        finally:
            os.kill(child, signal.SIGKILL)
        assert await proc.wait_gone(HANG) is True  # seen empty here
        sent = _reuse(monkeypatch, proc.pgid)
        _nothing_sent(proc, sent)
        proc.close()

    asyncio.run(main())


def test_a_number_led_by_a_process_started_at_another_time_is_not_the_agents_group(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Nobody looked between the group's emptying and the number's reuse: the new leader's
    start time tells the groups apart."""
    async def main() -> None:
        lines = _Lines()
        proc = await AgentProcess.spawn(["sh", "-c", "sleep 600 & echo $!; read x"], lines,
                                        env=None)
        await asyncio.wait_for(lines.line.wait(), HANG)
        child = int(lines.out.split()[0])
        try:
            started = groups.start_time(proc.pid)  # (it waits for its stdin)
            assert started is not None
            proc.write_stdin(b"\n")
            await asyncio.wait_for(proc.wait(), HANG)
            assert proc.alive()
        finally:
            os.kill(child, signal.SIGKILL)  # the group empties; nobody looks (at proc)
        await asyncio.wait_for(_emptied(proc.pgid), HANG)  # (a killed process takes a moment)

        def leader_started(pid: int | str) -> int | None:
            return started + 1 if int(pid) == proc.pgid else groups.live_start_time(pid)

        sent = _reuse(monkeypatch, proc.pgid, leader_started=leader_started)
        _nothing_sent(proc, sent)
        proc.close()

    asyncio.run(main())


def test_an_agent_reaped_after_its_loop_closed_is_gone_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop closed while the agent ran (a client's loop closed without ending its tasks):
    the child watcher still reaps the agent (Python 3.11: in its thread) but cannot tell the
    closed loop, so the exit is never delivered. A pid that no longer exists with the agent's
    start time (not even as a zombie) is reaped all the same."""
    loop = asyncio.new_event_loop()
    try:
        proc = loop.run_until_complete(AgentProcess.spawn(["sleep", "600"], _Lines(), env=None))
    finally:
        loop.close()
    # It ends only now: an agent quick to exit (``true``) could be heard before the close.
    os.kill(proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + HANG
    while groups.start_time(proc.pid) is not None:  # until reaped (by the watcher)
        if time.monotonic() > deadline:
            pytest.skip("this Python's child watcher does not reap after its loop closed")
        time.sleep(0.01)
    assert not proc.has_exited  # the exit never reached the closed loop
    pgid = proc.pgid
    sent = _reuse(monkeypatch, pgid, leader_started=lambda pid: 1 if int(pid) == pgid
                  else groups.live_start_time(pid))
    _nothing_sent(proc, sent)
    # Its transports belong to the closed loop: closing them raises, and left to the garbage
    # collector they would raise later, inside whatever test runs then.
    with contextlib.suppress(RuntimeError):
        proc.release()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        del proc
        gc.collect()
