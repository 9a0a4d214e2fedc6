"""A path the user typed comes back in an error shown inert at a terminal: ``--workspace``,
``--record`` (``run`` and ``chat``) and ``--resume`` echoed it raw, so a file name holding an
escape sequence (a name from a glob, a pasted one) cleared the screen or retitled the window
in the very line that should have named it. Now its controls are shown as ``\\x1b``, a newline
as ``\\n`` (the error stays one line), as every other name the command line shows."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

import click
import pytest
from pty_session import PtyRun, run_on_pty

from cursor_agent_api.cli import SUBCOMMANDS, main
from cursor_agent_api.cli.typed_path import TypedPath

EVIL = "x\x1b]0;PWNED\x07\x1b[2J\u009b31m\nError: fake"
EXECUTABLE = ("\x1b", "\x07", "\u009b")


@pytest.mark.parametrize(("command", "option"), [
    ("run", "--workspace"), ("run", "--record"), ("chat", "--workspace"), ("chat", "--record"),
    ("run", "--resume"), ("run", "--prompt-file"),
])
def test_a_typed_path_is_shown_inert(command: str, option: str, cli_env: dict[str, str],
                                     tmp_path: Path) -> None:
    value = EVIL if option == "--resume" else str(tmp_path / "missing" / EVIL)
    args = [command, "--simulate", "--trust", option, value]
    if command == "run" and option != "--prompt-file":
        args.append("hi")
    got = run_on_pty(args, cli_env, cli_env["TEST_WS"], stdout_tty=True)
    assert got.returncode == 2, got.screen[-500:]
    assert [seq for seq in EXECUTABLE if seq in got.screen] == [], repr(got.screen[-500:])
    assert "x\\x1b]0;PWNED\\x07\\x1b[2J\\x9b31m\\nError: fake" in got.screen, \
        repr(got.screen[-500:])


def test_the_continue_hint_shows_the_workspace_inert(cli_env: dict[str, str],
                                                     tmp_path: Path) -> None:
    """The footer's ``continue: cursor-agent-api chat --resume … --workspace '…'`` names the
    workspace the user typed: shown inert, as the header's ``▶ Auto · …`` shows it."""
    workspace = tmp_path / "w\x1b]0;PWNED\x07\x1b[2Jx"
    workspace.mkdir()
    got = run_on_pty(["run", "--simulate", "--trust", "--workspace", str(workspace), "hi"],
                     cli_env, cli_env["TEST_WS"], stdout_tty=True)
    assert got.returncode == 0, got.screen[-500:]
    assert "continue: cursor-agent-api chat --resume" in got.screen, got.screen[-500:]
    assert [seq for seq in EXECUTABLE if seq in got.screen] == [], repr(got.screen[-500:])


def _compact_on_pty(url: str, cwd: Path) -> PtyRun:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURSOR_AGENT_API_")}
    return run_on_pty(["compact", "--database-url", url], {**env, "NO_COLOR": "1"}, str(cwd),
                      stdout_tty=True)


def test_compact_shows_its_database_file_inert(tmp_path: Path) -> None:
    """``compact`` names the file of the URL it was given (percent-escapes decoded: ``%0A`` is
    a newline) in its errors and in its one line of success: shown inert, in one line."""
    folder = tmp_path / EVIL
    folder.mkdir()
    path = folder / "server.sqlite3"
    url = f"sqlite+aiosqlite:///{quote(str(path))}"
    missing = _compact_on_pty(url, tmp_path)
    assert missing.returncode == 1, missing.screen[-500:]
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE t (x)")
    done = _compact_on_pty(url, tmp_path)
    assert done.returncode == 0, done.screen[-500:]
    for got, said in ((missing, "Error: no database file "), (done, "compacted ")):
        assert [seq for seq in EXECUTABLE if seq in got.screen] == [], repr(got.screen[-500:])
        assert f"{said}{tmp_path}/x\\x1b]0;PWNED\\x07\\x1b[2J\\x9b31m\\nError: fake/" \
            in got.screen, repr(got.screen[-500:])


CLICK_PATHS = {  # every option of type click.Path: what it refuses (click's own check)
    ("serve", "--root"): "missing", ("worker", "--root"): "missing",
    ("worker", "--worktrees"): "file", ("run", "--workspace"): "file",
    ("chat", "--workspace"): "file", ("run", "--record"): "dir", ("chat", "--record"): "dir",
    ("run", "--prompt-file"): "dir",
}


def _click_path_options() -> dict[tuple[str, str], click.ParamType]:
    found = {}
    for name in SUBCOMMANDS:
        command = main.get_command(click.Context(main), name)
        assert command is not None
        commands = (command.commands.values() if isinstance(command, click.Group)
                    else [command])
        for each in commands:
            found |= {(name, max(p.opts, key=len)): p.type for p in each.params
                      if isinstance(p.type, click.Path)}
    return found


def test_every_click_path_option_is_a_typed_path_checked_below() -> None:
    """Every path option is a :class:`TypedPath` (its refusal inert, whatever click's wording)
    and in :data:`CLICK_PATHS` (the test below)."""
    found = _click_path_options()
    assert set(found) == set(CLICK_PATHS)
    assert {option: type(kind).__name__ for option, kind in found.items()
            if not isinstance(kind, TypedPath)} == {}


@pytest.mark.parametrize(("command", "option"), sorted(CLICK_PATHS))
def test_click_path_errors_show_the_path_inert(command: str, option: str,
                                               cli_env: dict[str, str], tmp_path: Path) -> None:
    """click's refusal (``Directory '…' does not exist.``, ``… is a file.``, ``… is a
    directory.``) names the path: its controls escaped, its newline ``\\n``, the message one
    line. click 8.1 (which pyproject accepts) put ``File '…' is a directory.`` as typed
    (``--record DIR``, ``--prompt-file DIR``: the escape obeyed, a forged second line)."""
    kind = CLICK_PATHS[command, option]
    path = tmp_path / ("missing" if kind == "missing" else kind) / EVIL
    if kind == "file":
        path.parent.mkdir()
        path.write_text("")
    elif kind == "dir":
        path.mkdir(parents=True)
    args = [command, option, str(path)]
    if command in ("run", "chat"):
        args[1:1] = ["--simulate", "--trust"]
    got = run_on_pty(args, cli_env, cli_env["TEST_WS"], stdout_tty=True)
    assert got.returncode == 2, got.screen[-500:]
    assert [seq for seq in EXECUTABLE if seq in got.screen] == [], repr(got.screen[-500:])
    assert "x\\x1b]0;PWNED\\x07\\x1b[2J\\x9b31m\\nError: fake" in got.screen, \
        repr(got.screen[-500:])
    assert "\nError: fake" not in got.screen.replace("\r\n", "\n"), repr(got.screen[-500:])
