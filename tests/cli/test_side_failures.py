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
    assert proc.returncode == 1 and "✗" in proc.stderr  # the turn's own failure, shown (stderr: a pipe)
    assert "not saved" in proc.stderr


def test_chat_goes_on_when_the_chat_cannot_be_saved(cli: Run, cli_env: dict[str, str]) -> None:
    unsavable(cli_env)
    proc = cli("chat", "--simulate", "--trust", stdin="list the files\nread notes.txt\n")
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert "notes.txt" in proc.stdout and proc.stdout.count("✓ done") == 2
    assert proc.stderr.count("not saved") == 2  # said for each turn it concerns


# ---- 4. resuming a damaged or unreadable saved chat ----------------------------------------

CHAT = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"


def chats_dir(cli_env: dict[str, str]) -> Path:
    chats = Path(cli_env["CURSOR_AGENT_API_HOME"]) / "chats"
    chats.mkdir(parents=True)
    return chats


def test_resume_of_a_damaged_saved_chat_is_one_line(cli: Run, cli_env: dict[str, str]) -> None:
    (chats_dir(cli_env) / f"{CHAT}.json").write_text('{"version": 2, "history": "x"}')
    for args, stdin in ((("run", "hi"), None), (("chat",), "hi\n")):
        proc = cli(*args, "--simulate", "--trust", "--resume", CHAT, stdin=stdin)
        no_traceback(proc)
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        assert "history must be a list" in proc.stdout + proc.stderr
        assert "›" not in proc.stdout  # the chat stops before asking for a prompt


def test_resume_of_an_unreadable_saved_chat_is_one_line(cli: Run,
                                                        cli_env: dict[str, str]) -> None:
    # a saved chat that cannot be read (EIO; a mode-0 file would do for a user other than root)
    (chats_dir(cli_env) / f"{CHAT}.json").symlink_to("/proc/self/mem")
    for args, stdin in ((("run", "hi"), None), (("chat",), "hi\n")):
        proc = cli(*args, "--simulate", "--trust", "--resume", CHAT, stdin=stdin)
        no_traceback(proc)
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        assert "cannot read the saved chat" in proc.stdout + proc.stderr


def test_show_of_an_unreadable_saved_chat_is_one_line(cli: Run, cli_env: dict[str, str]) -> None:
    (chats_dir(cli_env) / f"{CHAT}.json").symlink_to("/proc/self/mem")
    proc = cli("sessions", "show", CHAT)
    no_traceback(proc)
    assert proc.returncode == 1
    (line,) = proc.stderr.splitlines()
    assert "cannot read the saved chat" in line


# ---- 8. --record on a full disk ------------------------------------------------------------


def test_record_on_a_full_disk_warns_once_and_the_turn_finishes(cli: Run,
                                                               cli_env: dict[str, str]) -> None:
    proc = cli("run", "--simulate", "--trust", "--record", "/dev/full", "-o", "json",
               "list the files")
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert orjson.loads(proc.stdout)["success"] is True  # the whole turn, to its result
    (warning,) = [line for line in proc.stderr.splitlines() if "/dev/full" in line]
    assert "recording stopped" in warning and "No space left" in warning
    assert list((Path(cli_env["CURSOR_AGENT_API_HOME"]) / "chats").glob("*.json"))  # saved


def test_chat_record_on_a_full_disk_warns_once(cli: Run) -> None:
    proc = cli("chat", "--simulate", "--trust", "--record", "/dev/full",
               stdin="list the files\nread notes.txt\n")
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("✓ done") == 2
    assert proc.stderr.count("recording stopped") == 1
