"""A terminal whose encoding is not UTF-8 (ASCII, Latin-1): what it cannot show is written as
``?``, never a ``UnicodeEncodeError`` traceback, and the turn is saved."""

from __future__ import annotations

import glob
import os
import re
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


def test_the_c_locale_without_utf8_mode(cli_env: dict[str, str]) -> None:
    """``LC_ALL=C`` with Python's UTF-8 mode off (``PYTHONUTF8=0``): stdout is ASCII with
    ``surrogateescape``, not ``strict``, and argv's UTF-8 bytes arrive as lone surrogates.
    The prompt is still the UTF-8 text typed, and what the terminal cannot show is ``?``."""
    env = {**cli_env, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    env.pop("PYTHONIOENCODING", None)
    said = b""
    for args in (["run", "--simulate", "--trust", "say h\u00e9llo"], ["sessions", "list"],
                 ["run", "--simulate", "--trust", "-o", "text", "list the files"]):
        p = subprocess.run([*CLI, *args], capture_output=True, timeout=90, cwd=env["TEST_WS"],
                           env=env, check=False)
        assert b"Traceback" not in p.stderr, (args, p.stderr[-800:])
        assert p.returncode == 0, (args, p.stderr[-800:])
        said += p.stdout
    assert b"\nh?llo\n" in said, said[-800:]  # the agent said it: one character, shown as ?
    assert b"say h?llo" in said, said[-800:]  # sessions list: the chat's title


def test_chat_at_a_c_locale_terminal_sends_what_was_typed(cli_env: dict[str, str]) -> None:
    """The same locale at a terminal: a line typed in UTF-8 (``héllo``) is sent, not refused
    as "not UTF-8 text" (``input()`` decodes it as ASCII, each byte a lone surrogate)."""
    from pty_session import run_on_pty

    env = {**cli_env, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    got = run_on_pty(["chat", "--simulate", "--trust"], env, cli_env["TEST_WS"],
                     answers=[("Ctrl-D leaves", "say h\u00e9llo\r".encode()),
                              ("--simulate\r\n? ", b"\x04")],  # at the next prompt
                     stdout_tty=True)
    assert got.returncode == 0, got.screen[-600:]
    assert "not UTF-8" not in got.screen, got.screen[-600:]
    assert re.search(r"\nh\?llo *\r\n", got.screen), got.screen[-600:]  # é shown as ?
