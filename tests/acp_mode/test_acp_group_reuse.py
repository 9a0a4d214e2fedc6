"""An ACP agent that exits by itself is never signalled again (its group's number is free).

The client keeps the crashed agent's process until it closes or starts the next one; before,
it stayed in the interpreter's exit net (``process._RUNNING``) all that time, and the net
would SIGTERM its group's number, by then maybe an unrelated new session's. Now the process
leaves the net at its exit (its group seen empty). The reuse is simulated: ``group_alive``
says the group lives again and ``os.killpg`` records what would have been sent.
(:class:`AgentProcess` itself: ``tests/client/test_group_reuse.py``.)
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from acp_fake import FakeAgent

from cursor_agent_api import AsyncCursorAgentClient, CursorAgentClient
from cursor_agent_api.errors import AgentProcessError
from cursor_agent_api.runtime import groups
from cursor_agent_api.runtime import process as process_module

HANG = 30.0
"""Bound of the wait for the exit: it only turns a hang into a failure."""


def _recorded(monkeypatch: pytest.MonkeyPatch) -> list[process_module.AgentProcess]:
    """Every agent process spawned from now on."""
    procs: list[process_module.AgentProcess] = []
    original = process_module.AgentProcess.spawn

    async def spawn(cls: Any, *args: Any, **kwargs: Any) -> process_module.AgentProcess:
        proc = await original(*args, **kwargs)
        procs.append(proc)
        return proc

    monkeypatch.setattr(process_module.AgentProcess, "spawn", classmethod(spawn))
    return procs


def _reuse(patch: pytest.MonkeyPatch, pgid: int) -> list[int]:
    """Group ``pgid`` lives again (someone else's); what ``os.killpg`` sends it is recorded."""
    sent: list[int] = []
    real_killpg, real_alive = os.killpg, groups.group_alive
    patch.setattr(os, "killpg", lambda target, sig: sent.append(sig)
                  if target == pgid else real_killpg(target, sig))
    for module in (process_module, groups):
        patch.setattr(module, "group_alive", lambda target: target == pgid or real_alive(target))
    return sent


def test_an_acp_agent_that_exits_by_itself_leaves_the_exit_net(
        fake: FakeAgent, monkeypatch: pytest.MonkeyPatch) -> None:
    procs = _recorded(monkeypatch)
    with CursorAgentClient(fake.config()) as client:
        first = client.query("say hello")
        crashed = client.query("crash", resume=first.session_id)
        assert isinstance(crashed.exception, AgentProcessError) and len(procs) == 1
        proc = procs[0]
        # its loop has run the exit's callbacks once this is answered
        asyncio.run_coroutine_threadsafe(proc.wait(), proc._exited.get_loop()).result(HANG)
        with monkeypatch.context() as patch:  # the number is someone else's group now
            sent = _reuse(patch, proc.pgid)
            assert proc not in process_module._RUNNING
            process_module._stop_running_at_exit()
        assert sent == []


def test_the_next_event_loop_leaves_the_gone_agent_of_the_last_one_alone(
        fake: FakeAgent, monkeypatch: pytest.MonkeyPatch) -> None:
    """An async client used on a new loop stops the process of its last (closed) loop: not
    when that one is gone already."""
    procs = _recorded(monkeypatch)
    client = AsyncCursorAgentClient(fake.config())

    async def crash() -> None:
        first = await client.query("say hello")
        crashed = await client.query("crash", resume=first.session_id)
        assert isinstance(crashed.exception, AgentProcessError)
        await asyncio.wait_for(procs[0].wait(), HANG)

    async def again() -> None:
        async with client:
            assert (await client.query("say again")).success

    asyncio.run(crash())
    with monkeypatch.context() as patch:
        sent = _reuse(patch, procs[0].pgid)
        asyncio.run(again())
    assert sent == [] and len(procs) == 2
