"""A failure beside the turn — saving the chat, recording its lines, loading a saved chat —
is one clear line on stderr, never a traceback, and never costs the turn its answer."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import orjson

Run = Callable[..., subprocess.CompletedProcess[str]]


def no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr[-600:]


# ---- 3. the chat cannot be saved -----------------------------------------------------------


def unsavable(cli_env: dict[str, str]) -> None:
    home = Path(cli_env["CURSOR_AGENT_API_HOME"])
    home.mkdir()
    (home / "chats").write_text("")  # not a directory (any OSError: read-only, disk full)


def test_run_prints_the_result_when_the_chat_cannot_be_saved(cli: Run,
                                                             cli_env: dict[str, str]) -> None:
    unsavable(cli_env)
    proc = cli("run", "--simulate", "--trust", "-o", "json", "list the files")
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert orjson.loads(proc.stdout)["success"] is True  # stdout: the JSON, whole and alone
    (warning,) = [line for line in proc.stderr.splitlines() if "not saved" in line]
    assert "chats" in warning


def test_the_exit_code_is_the_turns_when_the_save_fails(cli: Run,
                                                        cli_env: dict[str, str]) -> None:
    unsavable(cli_env)
    proc = cli("run", "--simulate", "--trust", "list the files",
               extra_env={"CURSOR_AGENT_SIM_FAULT": "crash"})
    no_traceback(proc)
    assert proc.returncode == 1 and "✗" in proc.stdout  # the turn's own failure, shown
    assert "not saved" in proc.stderr


def test_chat_goes_on_when_the_chat_cannot_be_saved(cli: Run, cli_env: dict[str, str]) -> None:
    unsavable(cli_env)
    proc = cli("chat", "--simulate", "--trust", stdin="list the files\nread notes.txt\n")
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert "notes.txt" in proc.stdout and proc.stdout.count("✓ done") == 2
    assert proc.stderr.count("not saved") == 2  # said for each turn it concerns
