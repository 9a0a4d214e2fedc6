"""Saved chats on the command line: full ids, unique prefixes, ``--resume`` checked first,
and a piped ``chat`` that reports a failed turn in its exit status."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

Run = Callable[..., subprocess.CompletedProcess[str]]


def saved_chat(home: Path, chat_id: str, prompt: str = "hello") -> None:
    """A chat saved as the CLI saves it (``ConversationSession.save``), with one turn."""
    from cursor_agent_api import ConversationSession
    from cursor_agent_api.sessions import SessionTurn

    session = ConversationSession(trust=True, session_id=chat_id)
    try:
        session.history.append(SessionTurn(prompt, "hi", True, chat_id))
        session.save(home / "chats" / f"{chat_id}.json")
    finally:
        session.close()


@pytest.fixture
def home(cli_env: dict[str, str]) -> Path:
    path = Path(cli_env["CURSOR_AGENT_API_HOME"])
    (path / "chats").mkdir(parents=True)
    return path


def test_list_prints_whole_ids_on_a_pipe_even_when_narrow(cli: Run, home: Path) -> None:
    chat_id = str(uuid.uuid4())
    saved_chat(home, chat_id, "a first prompt that is rather long " * 3)
    proc = cli("sessions", "list", extra_env={"COLUMNS": "40"})
    assert proc.returncode == 0, proc.stderr
    assert chat_id in proc.stdout
    assert "…" not in proc.stdout.split()[proc.stdout.split().index(chat_id)]


def test_show_and_rm_take_a_unique_prefix(cli: Run, home: Path) -> None:
    chat_id = "1a89ecf3-b56a-4d6e-8f00-2b9d8c1e0a11"
    saved_chat(home, chat_id, "remember heron")
    saved_chat(home, "77777777-0000-4000-8000-000000000000")
    shown = cli("sessions", "show", "1a89")
    assert shown.returncode == 0, shown.stderr
    assert f"chat {chat_id}" in shown.stdout and "› remember heron" in shown.stdout
    assert cli("sessions", "show", "1a89ecf3-b56a-4d…").returncode == 0  # a cut id, pasted
    removed = cli("sessions", "rm", "1a8")
    assert removed.returncode == 0 and f"removed {chat_id}" in removed.stdout
    assert not (home / "chats" / f"{chat_id}.json").exists()


def test_an_ambiguous_or_unknown_prefix_is_one_clear_line(cli: Run, home: Path) -> None:
    saved_chat(home, "abc11111-0000-4000-8000-000000000000")
    saved_chat(home, "abc22222-0000-4000-8000-000000000000")
    for cmd in ("show", "rm"):  # an ID that names no one saved chat: a usage error (README)
        proc = cli("sessions", cmd, "abc")
        assert proc.returncode == 2
        (line,) = proc.stderr.splitlines()
        assert "abc matches 2 saved chats" in line and "abc11111" in line
        assert "wait for the chat's running turn" not in line  # no Python-side remedy
        proc = cli("sessions", cmd, "zzz")
        assert proc.returncode == 2 and "no saved chat matches 'zzz'" in proc.stderr
    assert len(list((home / "chats").iterdir())) == 2  # nothing removed


@pytest.mark.parametrize("command", ["chat", "run"])
def test_resume_bad_id_fails_before_any_prompt(cli: Run, home: Path, command: str) -> None:
    proc = cli(command, "--simulate", "--trust", "--resume", "BADID", stdin="hello\n")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    (line,) = proc.stderr.splitlines()
    assert "--resume BADID" in line and "not a chat id" in line
    assert "›" not in proc.stdout and "continue later" not in proc.stdout
    assert list((home / "chats").iterdir()) == []  # no chat saved under the bad id


def test_resume_an_ambiguous_prefix_is_exit_2(cli: Run, home: Path) -> None:
    saved_chat(home, "abc11111-0000-4000-8000-000000000000")
    saved_chat(home, "abc22222-0000-4000-8000-000000000000")
    proc = cli("chat", "--simulate", "--trust", "--resume", "abc", stdin="hello\n")
    assert proc.returncode == 2
    assert "matches 2 saved chats" in proc.stderr and "›" not in proc.stdout


def test_chat_and_run_resume_by_prefix(cli: Run) -> None:
    first = orjson.loads(cli("run", "--simulate", "--trust", "--output", "json",
                             "remember the codeword: heron").stdout)
    chat_id = first["session_id"]
    again = orjson.loads(cli("run", "--simulate", "--resume", chat_id[:8], "--output", "json",
                             "what did I ask you to remember?").stdout)
    assert again["session_id"] == chat_id and "heron" in again["result"]
    chat = cli("chat", "--simulate", "--resume", chat_id[:6], stdin="what is 6 * 7?\n")
    assert chat.returncode == 0, chat.stderr
    assert f"chat {chat_id} in" in chat.stdout and "42" in chat.stdout
    listed = [orjson.loads(x) for x in cli("sessions", "list", "--json").stdout.splitlines()]
    assert [(c["chat_id"], c["turns"]) for c in listed] == [(chat_id, 3)]


def test_a_resumed_uuid_this_tool_never_saved_goes_to_the_agent(cli: Run) -> None:
    chat_id = str(uuid.uuid4())
    proc = cli("run", "--simulate", "--trust", "--resume", chat_id, "--output", "json", "hi")
    assert proc.returncode == 0, proc.stderr
    assert orjson.loads(proc.stdout)["session_id"] == chat_id


def test_piped_chat_exits_1_after_a_failed_turn_and_stops(cli: Run) -> None:
    proc = cli("chat", "--simulate", "--trust", stdin="hello\nsecond prompt\n",
               extra_env={"CURSOR_AGENT_SIM_FAULT": "auth"})
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    out = proc.stdout + proc.stderr
    assert out.count("not authenticated") == 1  # printed once
    assert "error:" not in out and "AgentConfig" not in out
    assert "› second prompt" not in proc.stdout  # the script's next prompt is not sent


def test_piped_chat_that_went_well_exits_0(cli: Run) -> None:
    proc = cli("chat", "--simulate", "--trust", stdin="what is 6 * 7?\nwhat is 2 + 2?\n")
    assert proc.returncode == 0, proc.stderr
    assert "42" in proc.stdout and "› what is 2 + 2?" in proc.stdout


def test_the_saved_chats_directory_and_files_are_private(tmp_path: Path) -> None:
    """The saved chats hold prompts and answers: a directory only the user can list, files only
    the user can read (whatever the umask)."""
    import os
    import stat

    from cursor_agent_api import ConversationSession, CursorAgentClient
    from cursor_agent_api.cli.saved_chats import SavedChats
    from cursor_agent_api.testing import sim_binary, sim_env

    chats = SavedChats(tmp_path / "home" / "chats")
    old = os.umask(0o022)
    try:
        client = CursorAgentClient(agent_binary=sim_binary(), env=sim_env(speed=0),
                                   workspace=str(tmp_path), trust=True)
        with ConversationSession(client) as session:
            session.send("hello")
            path = chats.save(session)
    finally:
        os.umask(old)
    assert path is not None
    assert stat.S_IMODE(chats.root.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("columns", [30, 50, 80])
def test_list_at_a_narrow_terminal_loses_no_column(cli_env: dict[str, str], home: Path,
                                                   columns: int) -> None:
    """At a terminal too narrow for the table (a split pane, a phone, or 80 columns with a
    long first prompt), no chat's id is cut and no column dropped: each chat is shown on
    lines of its own instead — id whole, then turns, last used, workspace, first prompt."""
    import re

    from pty_session import run_on_pty

    chat_id = str(uuid.uuid4())
    saved_chat(home, chat_id, "a first prompt that is rather long " * 3)
    got = run_on_pty(["sessions", "list"], {**cli_env, "COLUMNS": str(columns)},
                     cli_env["TEST_WS"], stdout_tty=True, term="xterm")  # (dumb: 80 columns)
    assert got.returncode == 0, got.screen
    screen = got.screen.replace("\r", "")
    assert chat_id in screen, screen  # whole, on one line
    assert re.search(r"\b1 turn\b", screen), screen
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d", screen), screen  # last used
    assert "a first prompt" in screen, screen
    assert re.search(r"\bprint\b", screen), screen  # its transport
