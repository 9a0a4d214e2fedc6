"""The command as a person at a terminal runs it: stdin on a pseudo-terminal (and stderr on
it unless told otherwise), stdout on a pipe or on the terminal, answers typed when some
text appears, and a bound after which the command is killed (a hang guard, not a timing).

Example (not run here)::

    got = run_on_pty(["run", "--acp", "--simulate", "--trust", "hi"], env, cwd,
                     answers=[("reject (default)", b"a\\n")])
    assert got.returncode == 0
"""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]


@dataclass
class PtyRun:
    """What a run left: ``returncode`` (``None``: still running at the bound, then killed),
    what the terminal received (``screen``: stderr and echo, and stdout when it was there too),
    stdout when it was a pipe, and stderr when it was a pipe."""

    returncode: int | None
    screen: str
    stdout: str
    stderr: str
    typed: list[bytes] = field(default_factory=list)


Answer = tuple[str, bytes | Callable[[], None]]
"""When the terminal has shown this text (past what earlier answers waited for): type these
bytes (or call this function)."""


def run_on_pty(args: Sequence[str], env: dict[str, str], cwd: str, *,
               answers: Sequence[Answer] = (), stdout_tty: bool = False,
               stderr_tty: bool = True, bound: float = 60.0, term: str = "dumb") -> PtyRun:
    """Run the command with stdin on a pseudo-terminal (see the module's text); ``term``:
    its ``TERM`` (``dumb``: no escape sequences, 80 columns)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [*CLI, *args], stdin=slave, stdout=slave if stdout_tty else subprocess.PIPE,
        stderr=slave if stderr_tty else subprocess.PIPE, env={**env, "TERM": term},
        cwd=cwd, start_new_session=True)
    os.close(slave)
    screen, out, err = b"", b"", b""
    pending = list(answers)
    typed: list[bytes] = []
    seen = 0  # the answers wait for text past this point of the screen
    streams = {master: "screen"}
    if proc.stdout is not None:
        streams[proc.stdout.fileno()] = "out"
    if proc.stderr is not None:
        streams[proc.stderr.fileno()] = "err"
    deadline = time.monotonic() + bound
    try:
        while streams and time.monotonic() < deadline:
            ready, _, _ = select.select(list(streams), [], [], 0.1)
            for fd in ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # the terminal's other side closed (EIO)
                    chunk = b""
                if not chunk:
                    del streams[fd]
                    continue
                if streams[fd] == "screen":
                    screen += chunk
                elif streams[fd] == "out":
                    out += chunk
                else:
                    err += chunk
            while pending:
                text = pending[0][0].encode()
                where = screen.find(text, seen)
                if where < 0:
                    break
                seen = where + len(text)
                action = pending.pop(0)[1]
                if callable(action):
                    action()
                else:
                    os.write(master, action)
                    typed.append(action)
            if proc.poll() is not None and not ready:
                break
        try:  # its terminal and pipes closed: it is exiting
            returncode: int | None = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            returncode = None
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    finally:
        os.close(master)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    return PtyRun(returncode, screen.decode("utf-8", "replace"), out.decode("utf-8", "replace"),
                  err.decode("utf-8", "replace"), typed)
