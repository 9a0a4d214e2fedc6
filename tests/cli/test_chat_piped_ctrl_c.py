"""Ctrl-C in a ``chat`` whose prompts come from a pipe stops the chat (it dies from the SIGINT,
once its chat id is said: a shell's $? 130, a shell loop stops): the next
prompts assumed the cancelled turn ran, and with ``--force`` they would run commands after
the user asked it to stop. At a terminal, Ctrl-C cancels the turn only (test_terminal.py)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from contextlib import AbstractContextManager

import pytest
from test_signal_death import in_own_group

from cursor_agent_api.cli.chat import PIPED_STOP

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]


def _piped_chat(env: dict[str, str]) -> AbstractContextManager[subprocess.Popen[str]]:
    """The chat in its own process group, prompts on a pipe (test_signal_death's
    :func:`in_own_group`: a hang guard of 120 s)."""
    return in_own_group(
        [*CLI, "chat", "--simulate", "--trust"],
        {**env, "CURSOR_AGENT_SIM_FAULT": "slow", "CURSOR_AGENT_SIM_DELAY": "0.3"},
        stdin=subprocess.PIPE, stderr=subprocess.STDOUT)


def _lines_until(proc: subprocess.Popen[str], start: str) -> list[str]:
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line.rstrip("\n"))
        if line.startswith(start):
            return seen
    raise AssertionError(f"no line starting {start!r}: {seen}")


def test_ctrl_c_in_a_turn_stops_a_piped_chat(cli_env: dict[str, str]) -> None:
    with _piped_chat(cli_env) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write('create plan.txt with "step 1"\nappend step2 to plan.txt\n')
        proc.stdin.close()
        _lines_until(proc, "▶ ")  # the agent started turn 1: it is running
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C, as the terminal sends it to the group
        rest = proc.stdout.read().splitlines()
        assert proc.wait() == -signal.SIGINT, rest
    assert PIPED_STOP in rest and "⊘ cancelled" in rest
    assert not any(line.startswith("› append") for line in rest), rest  # turn 2 never sent
    assert rest[-1].startswith("continue later: cursor-agent-api chat --resume ")


def _syscall_readable() -> bool:
    try:
        with open("/proc/self/syscall") as f:
            return bool(f.read().split())
    except OSError:  # no /proc, or a sandbox that hides it (restricted ptrace, gVisor)
        return False


READ = ({"x86_64": "0", "aarch64": "63"}.get(os.uname().machine)
        if _syscall_readable() else None)
"""The number of the read system call, as /proc/PID/syscall shows it (None: not shown here)."""


def _wait_reading_stdin(proc: subprocess.Popen[str]) -> None:
    """Until the chat's main thread is blocked reading its standard input (``read(0, …)``):
    no line of output says so, the kernel does."""
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/syscall") as f:
                if f.read().split()[:2] == [READ, "0x0"]:
                    return
        except PermissionError:  # a child's is hidden here (ptrace restricted to admins)
            pytest.skip("/proc/PID/syscall of a child process is not readable here")
        time.sleep(0.01)
    raise AssertionError(f"the chat ended (exit {proc.returncode}) before reading a prompt")


@pytest.mark.skipif(READ is None, reason="/proc/PID/syscall and the read system call's "
                    "number on this machine")
def test_ctrl_c_while_a_piped_chat_waits_for_its_next_prompt_stops_it(
    cli_env: dict[str, str]
) -> None:
    with _piped_chat(cli_env) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        _lines_until(proc, "chat (new) in ")  # its first line
        _wait_reading_stdin(proc)  # Ctrl-C then reaches the read, not the code around it
        os.killpg(proc.pid, signal.SIGINT)
        with contextlib.suppress(BrokenPipeError):  # (the chat already gone: nobody reads it)
            proc.stdin.write("list the files\n")  # still read by a chat that went on
            proc.stdin.close()
        rest = proc.stdout.read().splitlines()
        assert proc.wait() == -signal.SIGINT, rest
    assert rest == [PIPED_STOP]  # nothing was sent: no chat to continue
