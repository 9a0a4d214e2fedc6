"""The shell tool is bounded (the recorded args say ``timeout: 30000``): a command that runs
past its time is killed, with what it started, and reported as ``timeout``; one that writes
without end is stopped once :data:`MAX_SHELL_OUTPUT` bytes are kept. It used to wait forever
(``sleep 1000``) or keep everything in memory (``yes``)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

from cursor_agent_api.protocol import ToolStatus
from cursor_agent_api.sim.workspace import MAX_SHELL_OUTPUT, SHELL_TIMEOUT_MS, run_shell

from .conftest import Sim, running


@pytest.mark.timeout(60)
def test_a_command_past_its_time_is_killed_with_what_it_started(tmp_path: Path) -> None:
    pid_file = tmp_path / "sleeper.pid"
    # 2 s: the shell must have started, written and forked the sleep by then, even on a loaded
    # machine (with 0.5 s, a shell 0.6 s late left an empty stdout and no pid file)
    outcome, code, out, _err, _ms = run_shell(
        tmp_path, f"echo started; sleep 1000 & echo $! > {pid_file}; wait", timeout_ms=2000
    )
    assert list(outcome) == ["timeout", "isBackground"]
    assert outcome["timeout"]["stdout"] == out == "started\n" and code < 0
    sleeper = int(pid_file.read_text())
    while running(sleeper):  # the sleep it started was killed too (the test's timeout bounds this)
        time.sleep(0.02)


@pytest.mark.timeout(60)
def test_without_proc_what_it_started_is_killed_too(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """macOS has no /proc: what the command started is found with ps."""
    from cursor_agent_api.runtime import groups

    monkeypatch.setattr(groups, "HAVE_PROC", False)
    monkeypatch.setattr(groups, "stat_fields", lambda pid: None)
    pid_file = tmp_path / "sleeper.pid"
    outcome, *_ = run_shell(tmp_path, f"sleep 1000 & echo $! > {pid_file}; wait", timeout_ms=2000)
    assert list(outcome) == ["timeout", "isBackground"]
    sleeper = int(pid_file.read_text())
    try:
        deadline = time.monotonic() + 20
        while running(sleeper) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not running(sleeper), "the command's sleep was left running"
    finally:
        with contextlib.suppress(OSError):
            os.kill(sleeper, signal.SIGKILL)


@pytest.mark.timeout(60)
def test_endless_output_is_cut_and_the_command_stopped(tmp_path: Path) -> None:
    outcome, code, out, _err, _ms = run_shell(tmp_path, "yes")
    assert len(out.encode()) == MAX_SHELL_OUTPUT and out.startswith("y\ny\n")
    assert outcome["failure"]["signal"] == "SIGKILL" and code < 0


def test_the_args_say_the_timeout_that_applies(sim: Sim) -> None:
    t = sim.stream("--force", "run `echo hi`").transcript
    (call,) = t.tool_calls
    assert call.args["timeout"] == SHELL_TIMEOUT_MS
    assert (call.status, call.stdout) == (ToolStatus.SUCCEEDED, "hi\n")


@pytest.mark.timeout(120)
def test_yes_under_force_ends_the_turn(sim: Sim) -> None:
    run = sim.stream("--force", "run `yes`")
    assert run.returncode == 0, run.err
    (call,) = run.transcript.tool_calls
    assert call.status is ToolStatus.FAILED and len(call.stdout or "") == MAX_SHELL_OUTPUT


@pytest.mark.timeout(60)
def test_a_command_that_leaves_something_in_the_background_is_over_when_its_shell_is(
    tmp_path: Path,
) -> None:
    """``sleep 60 & echo started``: the shell exits at once, its background child holds the
    output pipes. The command succeeded (it was reported as a 30 s timeout); what it left in
    the background runs on, in the agent's process group, as a terminal's shell leaves it."""
    pid_file = tmp_path / "bg.pid"
    outcome, code, out, _err, _ms = run_shell(
        tmp_path, f"sleep 60 & echo $! > {pid_file}; echo started", timeout_ms=20_000
    )
    try:  # a wait for the background sleep would have been a timeout
        assert list(outcome) == ["success", "isBackground"] and code == 0 and out == "started\n"
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


@pytest.mark.timeout(60)
def test_a_command_that_closes_its_output_and_runs_on_is_waited_for(tmp_path: Path) -> None:
    """``exec >file 2>&1; …``: the pipes end at once, the command goes on; it is waited for
    (it was killed at once)."""
    outcome, code, _out, _err, _ms = run_shell(tmp_path, "exec > out.txt 2>&1; sleep 0.5; echo done")
    assert list(outcome) == ["success", "isBackground"] and code == 0
    assert (tmp_path / "out.txt").read_text() == "done\n"
