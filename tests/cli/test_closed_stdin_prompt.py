"""``run -`` (and ``--prompt-file -``) with standard input closed (``<&-``) says it is closed and
what to do, as ``replay -`` does; an empty stdin is still "empty". It said "the prompt on stdin
is empty" for both: the user looked for an empty file that was never there."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]


@pytest.mark.parametrize("source", [["-"], ["--prompt-file", "-"]], ids=["dash", "prompt-file"])
def test_a_closed_stdin_is_said_closed(source: list[str], cli_env: dict[str, str]) -> None:
    command = shlex.join([*CLI, "run", "--simulate", "--trust", *source])
    proc = subprocess.run(["sh", "-c", f"exec {command} <&-"], capture_output=True, text=True,
                          timeout=60, check=False, cwd=cli_env["TEST_WS"], env=cli_env)
    assert proc.returncode == 2, proc.stderr[-300:]
    (line,) = proc.stderr.splitlines()
    assert "standard input" in line and "closed" in line and "empty" not in line, line
    assert "--prompt-file" in line, line  # what to do instead
    assert proc.stdout == ""


def test_an_empty_stdin_is_still_said_empty(cli_env: dict[str, str]) -> None:
    proc = subprocess.run([*CLI, "run", "--simulate", "--trust", "-"], input="",
                          capture_output=True, text=True, timeout=60, check=False,
                          cwd=cli_env["TEST_WS"], env=cli_env)
    assert proc.returncode == 2, proc.stderr[-300:]
    assert "the prompt on stdin is empty" in proc.stderr, proc.stderr
