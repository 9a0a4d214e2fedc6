"""``run`` in text mode on a pipe: a turn that fails says so on stderr, so that
``ans=$(cursor-agent-api run …)`` does not capture "✗ …" as the answer and the person sees
the failure (it was on stdout, stderr empty). The turn itself and the chat line stay on stdout."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.mark.parametrize("output", [[], ["--output", "text"]], ids=["auto", "text"])
def test_a_failed_turn_says_so_on_stderr(cli: Run, output: list[str]) -> None:
    proc = cli("run", "--simulate", "--trust", *output, "list the files",
               extra_env={"CURSOR_AGENT_SIM_FAULT": "auth"})
    assert proc.returncode == 1
    assert "✗" not in proc.stdout
    (line,) = [ln for ln in proc.stderr.splitlines() if "✗" in ln]
    assert "cursor-agent-sim login" in line


def test_a_timed_out_turn_says_so_on_stderr(cli: Run) -> None:
    proc = cli("run", "--simulate", "--trust", "--idle-timeout", "1", "list the files",
               extra_env={"CURSOR_AGENT_SIM_FAULT": "silence"})
    assert proc.returncode == 1
    assert "✗" not in proc.stdout
    (line,) = [ln for ln in proc.stderr.splitlines() if "✗" in ln]
    assert "--idle-timeout" in line


def test_a_success_stays_on_stdout(cli: Run) -> None:
    proc = cli("run", "--simulate", "--trust", "list the files")
    assert proc.returncode == 0
    assert "✓ done" in proc.stdout and "The workspace contains" in proc.stdout
    assert "✓" not in proc.stderr
