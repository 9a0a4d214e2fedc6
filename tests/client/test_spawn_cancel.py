"""A cancel that lands while ``AgentProcess.spawn`` is still starting the agent stops its group.

The spawn waits twice after the fork: while the event loop connects the agent's pipes
(inside ``loop.subprocess_exec``), and, with the owner guard, while it reads the guard's
status pipe. A cancel (a cancelled turn or command, Ctrl-C, a server's cancel) can land in
either. Here it lands there by construction: the agent script starts a child that holds its
stdout and stderr, reports both pids on a FIFO, and the test cancels only once they are in.

Before, a cancel inside ``subprocess_exec`` was left to asyncio, which SIGKILLs the agent
alone and then waits until every process holding its pipes has closed them (the child:
600 s here, forever for a daemon); uvloop let the cancel through at once, the child running
on. Now the start completes, the group is killed and seen gone, then the cancel goes on.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api.runtime import process as process_module
from cursor_agent_api.runtime.groups import group_alive, signal_group

HANG = 60.0
"""Bound of each wait here: it only turns a hang into a failure (the waits end in
milliseconds when the code is right)."""


def _agent(tmp_path: Path) -> tuple[str, Path]:
    """An agent script whose child holds its stdout/stderr; it writes ``PID CHILD`` to the
    FIFO it returns once the child runs."""
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    agent = tmp_path / "agent"
    agent.write_text(f"#!/bin/sh\nsleep 600 &\necho $$ $! > {fifo}\nwait\n")
    agent.chmod(0o755)
    return str(agent), fifo


def _started(fifo: Path) -> tuple[int, int]:
    """The agent's pid and its child's, once the agent has written them to ``fifo`` (blocks;
    an ``AssertionError`` after :data:`HANG` seconds)."""
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # a writer of our own: no EOF, never blocks
    try:
        data = b""
        deadline = time.monotonic() + HANG
        while not data.endswith(b"\n"):
            ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0.0))
            assert ready, "the agent never reported its child"
            data += os.read(fd, 64)
    finally:
        os.close(fd)
    pid, child = data.split()
    return int(pid), int(child)


class _Quiet:
    def stdout_data(self, data: bytes) -> None: ...
    def stdout_eof(self) -> None: ...
    def stderr_data(self, data: bytes) -> None: ...
    def stderr_eof(self) -> None: ...
    def exited(self) -> None: ...


def _run(loop_name: str, main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    if loop_name == "asyncio":
        asyncio.run(main())
        return
    uvloop = pytest.importorskip("uvloop")
    loop = uvloop.new_event_loop()
    try:
        loop.run_until_complete(main())
    finally:
        loop.close()


def _cancelled_while_connecting(tmp_path: Path, loop_name: str, *, storm: bool) -> list[bool]:
    """Spawn the agent; cancel the spawn right after the fork, inside ``subprocess_exec``, once
    the child runs (and, with ``storm``, cancel it again at every loop iteration until it
    ends). Whether the group was alive when the cancel came out of the spawn."""
    argv, fifo = _agent(tmp_path)
    pids: list[int] = []
    alive: list[bool] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        real = loop.subprocess_exec
        task: asyncio.Task[Any]

        def cancel() -> None:  # the loop's first callback after the fork: still connecting
            pids.extend(_started(fifo))
            task.cancel()
            if storm:
                loop.call_soon(cancel_again)

        def cancel_again() -> None:
            if not task.done():
                task.cancel()
                loop.call_soon(cancel_again)

        async def subprocess_exec(*args: Any, **kwargs: Any) -> Any:
            loop.call_soon(cancel)
            return await real(*args, **kwargs)

        loop.subprocess_exec = subprocess_exec  # type: ignore[method-assign]
        task = asyncio.ensure_future(process_module.AgentProcess.spawn([argv], _Quiet(), env=None))
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), HANG)
        alive.append(group_alive(pids[0]))

    try:
        _run(loop_name, main)
    finally:
        if pids:  # a failing run leaves the group: do not leak it into the next tests
            signal_group(pids[0], signal.SIGKILL)
    return alive


@pytest.fixture(params=[True, False], ids=["guard", "no-guard"])
def guard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    if request.param and not process_module.OWNER_GUARD:
        pytest.skip("the owner guard is Linux's")
    monkeypatch.setattr(process_module, "OWNER_GUARD", request.param)
    return bool(request.param)


@pytest.mark.parametrize("loop_name", ["asyncio", "uvloop"])
def test_a_spawn_cancelled_while_its_pipes_connect_stops_its_group(tmp_path, loop_name, guard):
    assert _cancelled_while_connecting(tmp_path, loop_name, storm=False) == [False]


@pytest.mark.parametrize("loop_name", ["asyncio", "uvloop"])
def test_cancelling_the_spawn_again_and_again_still_stops_its_group(tmp_path, loop_name):
    """Each further cancel lands while the spawn waits for the start, then for the group to
    go: none of them cuts those waits short (both are bounded)."""
    assert _cancelled_while_connecting(tmp_path, loop_name, storm=True) == [False]


def test_a_command_cancelled_while_the_guard_reports_stops_its_group_first(tmp_path, monkeypatch):
    """The cancel lands while the spawn reads the owner guard's status pipe (the agent already
    runs, with a child): the group is gone when the cancel propagates. Before, the spawn sent
    SIGKILL and let the cancel go on at once, the group still dying (a fresh-clone run saw
    it alive). The test waits for the spawn to be in that read, and for the child to run,
    before it cancels (it polled the agent's pid file: under load the cancel could land
    before the read, inside ``subprocess_exec``, and wait out the child's 30 s)."""
    from cursor_agent_api import AgentConfig
    from cursor_agent_api.runtime.commands import fetch_models

    if not process_module.OWNER_GUARD:
        pytest.skip("the owner guard is Linux's")
    real = process_module._read_to_eof
    argv, fifo = _agent(tmp_path)
    pids: list[int] = []
    alive: list[bool] = []

    async def main() -> None:
        reading = asyncio.Event()

        async def read_then_hold(*args: Any, **kwargs: Any) -> bytes:
            report = await real(*args, **kwargs)
            reading.set()
            await asyncio.Event().wait()  # still reading when the cancel comes
            return report

        monkeypatch.setattr(process_module, "_read_to_eof", read_then_hold)
        task = asyncio.ensure_future(fetch_models(AgentConfig(agent_binary=argv), timeout=None))
        await asyncio.wait_for(reading.wait(), HANG)
        pids.extend(_started(fifo))  # the agent and its child run
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), HANG)
        alive.append(group_alive(pids[0]))

    try:
        asyncio.run(main())
    finally:
        if pids:
            signal_group(pids[0], signal.SIGKILL)
    assert alive == [False]
