"""A terminal whose encoding is not UTF-8 (ASCII, Latin-1): what it cannot show is written as
``?``, never a ``UnicodeEncodeError`` traceback, and the turn is saved."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from collections.abc import Callable

import pytest

# (not from conftest: which conftest a bare import finds depends on the run)
CLI = [sys.executable, "-m", "cursor_agent_api.cli"]


Cli = Callable[..., subprocess.CompletedProcess[str]]


def _narrow(env: dict[str, str], encoding: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The command with stdout and stderr in ``encoding``, its output read in it."""
    p = subprocess.run([*CLI, *args], capture_output=True, timeout=90, cwd=env["TEST_WS"],
                       env={**env, "PYTHONUTF8": "0", "PYTHONIOENCODING": encoding}, check=False)
    return subprocess.CompletedProcess(p.args, p.returncode, p.stdout.decode(encoding),
                                       p.stderr.decode(encoding))


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_run_and_sessions_list_on_a_narrow_terminal(cli: Cli, cli_env: dict[str, str],
                                                    encoding: str) -> None:
    # A chat whose title the terminal cannot show, saved from a UTF-8 terminal.
    assert cli("run", "--simulate", "--trust", "say h\u00e9llo \u25b6").returncode == 0
    proc = _narrow(cli_env, encoding, "run", "--simulate", "--trust", "write hello.py")
    assert "Traceback" not in proc.stderr, proc.stderr[-800:]
    assert proc.returncode == 0, proc.stderr[-800:]
    assert "SIMULATED" in proc.stdout + proc.stderr
    assert os.path.exists(os.path.join(cli_env["TEST_WS"], "hello.py"))
    chats = glob.glob(os.path.join(cli_env["CURSOR_AGENT_API_HOME"], "chats", "*.json"))
    assert len(chats) == 2  # both turns saved
    listed = _narrow(cli_env, encoding, "sessions", "list")
    assert "Traceback" not in listed.stderr, listed.stderr[-800:]
    assert listed.returncode == 0
    assert "write hello.py" in listed.stdout and "say h" in listed.stdout
