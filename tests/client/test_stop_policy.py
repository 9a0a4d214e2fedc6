"""The stop policy, against a table: scripted inputs at fake times, the action expected."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Any

import pytest

from cursor_agent_api.runtime.stop_policy import (
    CLOSE_PIPES,
    FINISH,
    Action,
    Signal,
    StopPolicy,
    StopReason,
    Wait,
)

TERM, KILL, INT = signal.SIGTERM, signal.SIGKILL, signal.SIGINT


@dataclass
class Seen:
    """What the caller observes at one step (the fake clock's ``t`` included)."""

    t: float
    exited: bool = False
    group_empty: bool = False
    eof: bool = False
    activity: float | None = None  # last output; defaults to the start
    paused: bool = False
    result: bool = False  # the result arrives at t, before the step
    cancel: int | None = None  # a cancel request arrives at t, before the step


def run_table(rows: list[tuple[Seen, Action]], **config: Any) -> StopPolicy:
    settings: dict[str, Any] = {"timeout": None, "idle_timeout": None, "result_grace": 3.0,
                                "kill_grace": 2.0, "drain_grace": 2.0, "poll": 0.05}
    settings.update(config)
    policy = StopPolicy(started_at=0.0, **settings)
    last = 0.0
    for i, (seen, expected) in enumerate(rows):
        if seen.activity is not None:
            last = seen.activity
        if seen.result:
            policy.result_seen(seen.t)
        if seen.cancel is not None:
            policy.cancel(seen.cancel)
        got = policy.step(seen.t, exited=seen.exited, group_empty=seen.group_empty,
                          eof=seen.eof, last_activity=last, paused=seen.paused)
        assert got == expected, f"row {i} ({seen}): {got} != {expected}"
    return policy


GONE = {"exited": True, "group_empty": True}

TABLES: dict[str, tuple[dict[str, Any], list[tuple[Seen, Action]], str | None]] = {
    "clean exit after the result": ({}, [
        (Seen(0.0), Wait(None)),
        (Seen(1.0, result=True, activity=1.0), Wait(4.0)),
        (Seen(1.5, **GONE), Wait(3.5)),          # exited: pipes not closed yet (drain clock)
        (Seen(1.6, **GONE, eof=True), FINISH),
    ], None),
    "result but the CLI never exits: SIGTERM after result_grace, SIGKILL after kill_grace": ({}, [
        (Seen(1.0, result=True), Wait(4.0)),
        (Seen(3.9), Wait(4.0)),
        (Seen(4.0), Signal(TERM, StopReason.AFTER_RESULT)),
        (Seen(4.0), Wait(6.0)),
        (Seen(5.0), Wait(6.0)),
        (Seen(6.0), Signal(KILL, StopReason.AFTER_RESULT)),
        (Seen(6.0), Wait(None)),
        (Seen(6.1, **GONE, eof=True), FINISH),
    ], StopReason.AFTER_RESULT),
    "SIGTERM obeyed: no SIGKILL": ({}, [
        (Seen(4.0, result=True), Wait(7.0)),
        (Seen(7.0), Signal(TERM, StopReason.AFTER_RESULT)),
        (Seen(7.2, **GONE), Wait(9.0)),          # the kill_grace deadline comes first
        (Seen(9.0, **GONE), Wait(9.2)),          # group gone: no SIGKILL; the drain clock
        (Seen(7.3, **GONE, eof=True), FINISH),
    ], StopReason.AFTER_RESULT),
    "group gone when kill_grace ends: SIGKILL not sent": ({}, [
        (Seen(0.0, cancel=TERM), Signal(TERM, StopReason.CANCEL)),
        (Seen(2.0, **GONE), Wait(4.0)),           # phase killed without a signal; drain runs
        (Seen(4.0, **GONE), CLOSE_PIPES),
        (Seen(4.0, **GONE), Wait(None)),          # closed once; the caller reports EOF
        (Seen(4.0, **GONE, eof=True), FINISH),
    ], StopReason.CANCEL),
    "timeout before the result": ({"timeout": 10.0}, [
        (Seen(0.0), Wait(10.0)),
        (Seen(9.99, activity=9.0), Wait(10.0)),
        (Seen(10.0), Signal(TERM, StopReason.TIMEOUT)),
        (Seen(12.0), Signal(KILL, StopReason.TIMEOUT)),
    ], StopReason.TIMEOUT),
    "the result disarms the timeout": ({"timeout": 10.0, "result_grace": 30.0}, [
        (Seen(9.0, result=True), Wait(39.0)),
        (Seen(10.0), Wait(39.0)),
    ], None),
    "idle timeout, reset by output": ({"idle_timeout": 5.0}, [
        (Seen(0.0), Wait(5.0)),
        (Seen(4.0, activity=4.0), Wait(9.0)),
        (Seen(9.0), Signal(TERM, StopReason.IDLE)),
    ], StopReason.IDLE),
    "idle clock stops while paused": ({"idle_timeout": 5.0}, [
        (Seen(6.0, paused=True), Wait(None)),
        (Seen(60.0, paused=True), Wait(None)),
        (Seen(60.0, activity=60.0), Wait(65.0)),  # resuming counts as output
    ], None),
    "timeout wins over idle at the same instant": ({"timeout": 5.0, "idle_timeout": 5.0}, [
        (Seen(5.0), Signal(TERM, StopReason.TIMEOUT)),
    ], StopReason.TIMEOUT),
    "cancel with SIGINT, then SIGKILL escalates at once": ({}, [
        (Seen(1.0, cancel=INT), Signal(INT, StopReason.CANCEL)),
        (Seen(1.5), Wait(3.0)),
        (Seen(1.6, cancel=KILL), Signal(KILL, StopReason.CANCEL)),
        (Seen(1.7), Wait(None)),
    ], StopReason.CANCEL),
    "cancel with SIGKILL: nothing follows": ({}, [
        (Seen(1.0, cancel=KILL), Signal(KILL, StopReason.CANCEL)),
        (Seen(9.0), Wait(None)),
    ], StopReason.CANCEL),
    "a second SIGTERM cancel changes nothing": ({}, [
        (Seen(1.0, cancel=INT), Signal(INT, StopReason.CANCEL)),
        (Seen(1.1, cancel=TERM), Wait(3.0)),
    ], StopReason.CANCEL),
    "cancel wins over a due timeout": ({"timeout": 1.0}, [
        (Seen(1.0, cancel=INT), Signal(INT, StopReason.CANCEL)),
    ], StopReason.CANCEL),
    "leftovers after the agent exited: SIGTERM, poll, SIGKILL": ({}, [
        (Seen(1.0, result=True), Wait(4.0)),
        (Seen(1.5, exited=True), Signal(TERM, StopReason.LEFTOVER)),
        (Seen(1.5, exited=True), Wait(1.55)),     # members are not our children: poll
        (Seen(3.5, exited=True), Signal(KILL, StopReason.LEFTOVER)),
        (Seen(3.5, exited=True), Wait(3.55)),
        (Seen(3.6, **GONE, eof=True), FINISH),
    ], StopReason.LEFTOVER),
    "exit without a result and without timers": ({}, [
        (Seen(0.5, **GONE, eof=True), FINISH),
    ], None),
    "an outsider holds the pipes: closed after drain_grace": ({}, [
        (Seen(1.0, **GONE), Wait(3.0)),
        (Seen(2.9, **GONE), Wait(3.0)),
        (Seen(3.0, **GONE), CLOSE_PIPES),
        (Seen(3.0, **GONE, eof=True), FINISH),
    ], None),
    "the drain clock waits for a paused consumer": ({}, [
        (Seen(1.0, **GONE, paused=True), Wait(None)),
        (Seen(9.0, **GONE), Wait(11.0)),
        (Seen(10.0, **GONE, paused=True), Wait(None)),
        (Seen(11.0, **GONE), CLOSE_PIPES),
    ], None),
    "exited with the result and the group alive: leftover, not after_result": ({}, [
        (Seen(1.0, result=True, exited=True), Signal(TERM, StopReason.LEFTOVER)),
    ], StopReason.LEFTOVER),
    "timers do not apply once the agent exited": ({"timeout": 1.0, "idle_timeout": 1.0}, [
        (Seen(5.0, **GONE), Wait(7.0)),
    ], None),
    "output closed without a result, the agent lingers: SIGTERM after result_grace": ({}, [
        (Seen(0.0), Wait(None)),
        (Seen(1.0, eof=True), Wait(4.0)),         # nothing more can come: a bounded wait
        (Seen(3.9, eof=True), Wait(4.0)),
        (Seen(4.0, eof=True), Signal(TERM, StopReason.OUTPUT_CLOSED)),
        (Seen(6.0, eof=True), Signal(KILL, StopReason.OUTPUT_CLOSED)),
        (Seen(6.1, **GONE, eof=True), FINISH),
    ], StopReason.OUTPUT_CLOSED),
    "output closed, then the agent exits within the grace: no signal": ({}, [
        (Seen(1.0, eof=True), Wait(4.0)),
        (Seen(1.2, **GONE, eof=True), FINISH),
    ], None),
    "output closed while paused: the grace still runs (nothing is left to read)": ({}, [
        (Seen(1.0, eof=True, paused=True), Wait(4.0)),
        (Seen(4.0, eof=True, paused=True), Signal(TERM, StopReason.OUTPUT_CLOSED)),
    ], StopReason.OUTPUT_CLOSED),
    "output closed with result_grace 0: stopped at once": ({"result_grace": 0.0}, [
        (Seen(1.0, eof=True), Signal(TERM, StopReason.OUTPUT_CLOSED)),
    ], StopReason.OUTPUT_CLOSED),
    "output closed after the result: the result's grace, unchanged": ({}, [
        (Seen(1.0, result=True), Wait(4.0)),
        (Seen(2.0, eof=True), Wait(4.0)),         # counted from the result, not the EOF
        (Seen(4.0, eof=True), Signal(TERM, StopReason.AFTER_RESULT)),
    ], StopReason.AFTER_RESULT),
    "output closed: a due timeout comes first": ({"timeout": 2.0}, [
        (Seen(1.0, eof=True), Wait(2.0)),
        (Seen(2.0, eof=True), Signal(TERM, StopReason.TIMEOUT)),
    ], StopReason.TIMEOUT),
    "output closed: a cancel comes first": ({}, [
        (Seen(1.0, eof=True), Wait(4.0)),
        (Seen(2.0, eof=True, cancel=TERM), Signal(TERM, StopReason.CANCEL)),
        (Seen(4.0, eof=True), Signal(KILL, StopReason.CANCEL)),
    ], StopReason.CANCEL),
}


@pytest.mark.parametrize("name", list(TABLES))
def test_stop_policy_table(name: str) -> None:
    config, rows, reason = TABLES[name]
    policy = run_table(rows, **config)
    assert policy.reason == reason


def test_finish_is_final_and_phase_tracks_the_stop() -> None:
    p = StopPolicy(started_at=0.0, timeout=1.0, idle_timeout=None, result_grace=1.0,
                   kill_grace=1.0)
    assert p.phase == "running"
    assert p.step(1.0, exited=False, group_empty=False, eof=False, last_activity=0.0) == \
        Signal(TERM, StopReason.TIMEOUT)
    assert p.phase == "stopping"
    assert p.step(2.0, exited=False, group_empty=False, eof=False, last_activity=0.0) == \
        Signal(KILL, StopReason.TIMEOUT)
    assert p.phase == "killed"
    assert p.step(2.1, exited=True, group_empty=True, eof=True, last_activity=0.0) is FINISH
    assert p.phase == "done"


def test_result_seen_keeps_the_first_time() -> None:
    p = StopPolicy(started_at=0.0, timeout=None, idle_timeout=None, result_grace=1.0,
                   kill_grace=1.0)
    p.result_seen(1.0)
    p.result_seen(5.0)
    assert p.step(1.5, exited=False, group_empty=False, eof=False, last_activity=0.0) == \
        Wait(2.0)
