"""``run`` in text mode on a pipe: a turn that fails says so on stderr, so that
``ans=$(cursor-agent-api run …)`` does not capture "✗ …" as the answer and the person sees
the failure (it was on stdout, stderr empty). The turn itself and the chat line stay on stdout."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.mark.parametrize(
    ("args", "fault", "named"),
    [
        ([], "auth", "cursor-agent-sim login"),
        (["--output", "text"], "auth", "cursor-agent-sim login"),
        (["--idle-timeout", "1"], "silence", "--idle-timeout"),
    ],
    ids=["failed-auto", "failed-text", "timed-out"],
)
def test_a_failed_or_timed_out_turn_says_so_on_stderr(
    cli: Run, args: list[str], fault: str, named: str
) -> None:
    proc = cli("run", "--simulate", "--trust", *args, "list the files",
               extra_env={"CURSOR_AGENT_SIM_FAULT": fault})
    assert proc.returncode == 1
    assert "✗" not in proc.stdout
    (line,) = [ln for ln in proc.stderr.splitlines() if "✗" in ln]
    assert named in line


def test_a_success_stays_on_stdout(cli: Run) -> None:
    proc = cli("run", "--simulate", "--trust", "list the files")
    assert proc.returncode == 0
    assert "✓ done" in proc.stdout and "The workspace contains" in proc.stdout
    assert "✓" not in proc.stderr


@pytest.mark.parametrize("flag", ["--timeout", "--idle-timeout"])
def test_a_timed_out_turn_is_told_in_the_command_line_s_words(cli: Run, flag: str) -> None:
    """The message said ``past timeout=1 s`` / ``for idle_timeout=1 s``: the library's
    argument, where the person typed ``--timeout 1``; only its remedy named the flags."""
    proc = cli("run", "--simulate", "--trust", flag, "1", "list the files",
               extra_env={"CURSOR_AGENT_SIM_FAULT": "silence"})
    assert proc.returncode == 1
    (line,) = [ln for ln in proc.stderr.splitlines() if "✗" in ln]
    assert "timeout=" not in line and "1 s" in line, line
    assert "--timeout / --idle-timeout" in line, line
