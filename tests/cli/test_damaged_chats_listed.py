"""A saved chat's file that cannot be read is listed, with why (not hidden behind "no saved
chats yet"), and `sessions show` names `sessions rm` for it; its name and content stay data."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import orjson

Run = Callable[..., subprocess.CompletedProcess[str]]

HOSTILE = "\x1b]0;PWNED\x07[bold]x[red]"
"""A file name's part that must stay data: an escape sequence (never sent raw) and markup."""


def one_chat(cli: Run, cli_env: dict[str, str]) -> Path:
    """A chat run and saved by ``run --simulate``: its file."""
    proc = cli("run", "--simulate", "--trust", "remember the deploy target")
    assert proc.returncode == 0, proc.stderr
    (path,) = (Path(cli_env["CURSOR_AGENT_API_HOME"]) / "chats").glob("*.json")
    return path


def test_list_shows_a_damaged_chat_instead_of_none(cli: Run, cli_env: dict[str, str]) -> None:
    path = one_chat(cli, cli_env)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # a save cut short (a full disk, a hand edit)
    proc = cli("sessions", "list")
    assert proc.returncode == 0, proc.stderr
    assert "no saved chats yet" not in proc.stdout
    assert path.stem in proc.stdout and "cannot be read" in proc.stdout
    as_json = cli("sessions", "list", "--json")
    (line,) = as_json.stdout.splitlines()
    record = orjson.loads(line)
    assert record["chat_id"] == path.stem and "not JSON" in record["unreadable"]


def test_list_shows_damaged_chats_beside_good_ones(cli: Run, cli_env: dict[str, str]) -> None:
    good = one_chat(cli, cli_env)
    bad = good.with_name("8b72ae6d-ab42-4854-991e-6ecf580e66c2.json")
    bad.write_text("{")
    proc = cli("sessions", "list")
    assert proc.returncode == 0, proc.stderr
    assert good.stem in proc.stdout and "remember the deploy target" in proc.stdout
    assert bad.stem in proc.stdout and "cannot be read" in proc.stdout


def test_a_hostile_file_name_is_listed_inert(cli: Run, cli_env: dict[str, str]) -> None:
    chats = Path(cli_env["CURSOR_AGENT_API_HOME"]) / "chats"
    chats.mkdir(parents=True)
    (chats / f"{HOSTILE}.json").write_text("not json" + HOSTILE)
    proc = cli("sessions", "list")
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout + proc.stderr and "\x07" not in proc.stdout
    assert "\\x1b]0;PWNED" in proc.stdout and "[bold]x[red]" in proc.stdout  # shown, as data


def test_show_of_a_damaged_chat_names_rm(cli: Run, cli_env: dict[str, str]) -> None:
    path = one_chat(cli, cli_env)
    path.write_text("{")
    proc = cli("sessions", "show", path.stem[:8])
    assert proc.returncode == 1
    assert f"sessions rm {path.stem}" in proc.stderr, proc.stderr
    assert "sessions list" not in proc.stderr  # which would not show it either before


def test_what_is_not_a_chat_file_is_listed_said_and_never_read(cli: Run, cli_env: dict[str, str]) -> None:
    """Review 46: a folder named ``<id>.json`` was listed, but ``show`` said there is no such
    chat and ``rm`` ended in a traceback; a FIFO so named hung ``sessions list`` (it was read);
    a file whose name is not a chat id was listed, and no command could name it."""
    import os

    path = one_chat(cli, cli_env)
    chat_id = path.stem
    path.unlink()
    path.mkdir()
    fifo = path.with_name("0a1b2c3d-0000-4000-8000-000000000000.json")
    os.mkfifo(fifo)
    path.with_name("notes (copy).json").write_text("{}")
    listed = cli("sessions", "list", timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.count("not a file") == 2 and "not a saved chat's file name" in listed.stdout
    shown = cli("sessions", "show", chat_id)
    assert shown.returncode == 1 and "not a file" in shown.stderr and "sessions rm" in shown.stderr
    removed = cli("sessions", "rm", chat_id)
    assert removed.returncode == 1 and "Traceback" not in removed.stderr, removed.stderr
    assert "remove it by hand" in removed.stderr and path.is_dir()


def test_a_chat_file_copied_under_another_id_is_damaged_everywhere(
        cli: Run, cli_env: dict[str, str]) -> None:
    """Audit 12: a copy of chat A's file as ``B.json`` (a backup, a hand copy) was listed as A
    twice; ``show B`` showed A; ``chat --resume B`` ran a new chat and its save merged A's
    turns into B. The file is the damaged file it is: listed so, never merged or resumed."""
    import shutil

    path = one_chat(cli, cli_env)
    copy = path.with_name("11111111-1111-4111-8111-111111111111.json")
    shutil.copy(path, copy)
    before = copy.read_bytes()
    listed = cli("sessions", "list", "--json")
    records = {r["chat_id"]: r for r in map(orjson.loads, listed.stdout.splitlines())}
    assert set(records) == {path.stem, copy.stem}, records
    assert records[path.stem]["unreadable"] is None
    assert path.stem in records[copy.stem]["unreadable"], records[copy.stem]
    shown = cli("sessions", "show", copy.stem)
    assert shown.returncode == 1 and f"sessions rm {copy.stem}" in shown.stderr, shown
    for command in ("chat", "run"):
        args = [command, "--simulate", "--trust", "--resume", copy.stem[:8]]
        resumed = cli(*args, *(["hi"] if command == "run" else []), stdin="hi\n")
        assert resumed.returncode == 1, resumed.stdout + resumed.stderr
        said = resumed.stdout + resumed.stderr
        assert f"sessions rm {copy.stem}" in said and path.stem in said, said
        assert "›" not in resumed.stdout  # no turn ran
    assert copy.read_bytes() == before


def test_a_folder_named_as_a_chat_is_not_resumed(cli: Run, cli_env: dict[str, str]) -> None:
    path = one_chat(cli, cli_env)
    chat_id = path.stem
    path.unlink()
    path.mkdir()
    for command in ("chat", "run"):
        resumed = cli(command, "--simulate", "--trust", "--resume", chat_id,
                      *(["hi"] if command == "run" else []), stdin="hi\n")
        assert resumed.returncode == 1, resumed.stdout + resumed.stderr
        said = resumed.stdout + resumed.stderr
        assert "not a file" in said and f"sessions rm {chat_id}" in said, said
    assert path.is_dir() and not any(path.iterdir())
