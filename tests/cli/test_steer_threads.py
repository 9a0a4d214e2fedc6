"""The terminal's questions and the turn's view: the view never waits for the person, and a
question ends when the library stops waiting for it (the turn ends or is cancelled)."""

from __future__ import annotations

import asyncio
import io
import os
import sys
import threading

import pytest
from rich.console import Console

from cursor_agent_api.cli.steer import TerminalSteering
from cursor_agent_api.permissions import Allow, PermissionRequest
from cursor_agent_api.protocol.tools import ToolCall, ToolKind

REQUEST = PermissionRequest("s", ToolCall("c", ToolKind.SHELL, args={"command": "ls"}))
BOUND = 30.0  # a hang guard, not a timing


def test_view_updates_are_kept_while_a_question_is_open_and_applied_after() -> None:
    asked, answer = threading.Event(), threading.Event()

    def reader() -> str:
        asked.set()
        answer.wait(BOUND)
        return "a"

    steer = TerminalSteering(Console(file=io.StringIO()), reader=reader)
    decisions: list[object] = []
    person = threading.Thread(target=lambda: decisions.append(steer.can_use_tool(REQUEST)))
    person.start()
    assert asked.wait(BOUND)
    applied: list[int] = []
    steer.show(lambda: applied.append(1))  # returns at once: the person has not answered
    steer.show(lambda: applied.append(2))
    assert applied == []
    answer.set()
    person.join(BOUND)
    assert decisions == [Allow()]
    assert applied == [1, 2]  # in order, once the question has gone


def test_a_question_ends_when_the_library_stops_waiting_for_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    read_end, write_end = os.pipe()  # stdin on which nobody types
    out = io.StringIO()
    with os.fdopen(read_end, "r") as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        steer = TerminalSteering(Console(file=out, width=200))
        callback = steer.fields()["can_use_tool"]

        async def turn() -> None:
            task = asyncio.ensure_future(callback(REQUEST))
            while "reject (default)" not in out.getvalue():
                await asyncio.sleep(0.01)
            task.cancel()  # what the library does on a cancel, a timeout, a crash
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(asyncio.wait_for(turn(), BOUND))
        assert steer.lock.acquire(timeout=BOUND)  # the reader has gone: the lock is free
        steer.lock.release()
    os.close(write_end)
    assert "(closed unanswered)" in out.getvalue()
