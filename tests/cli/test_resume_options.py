"""``--resume`` of a saved chat with ``--model`` / ``--workspace``: a model given on the
command line wins over the saved one; a workspace not given is the saved one (not the current
folder), and another one given is refused (the agent keeps chats per folder: there it would
start afresh, audit 12); the chat's header names the folder the agent really runs in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]


def run_in(env: dict[str, str], cwd: Path | str, *args: str, stdin: str | None = None
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], input=stdin, capture_output=True, text=True,
                          timeout=90, cwd=cwd, env=env, check=False)


def saved(env: dict[str, str], chat_id: str) -> dict[str, object]:
    path = Path(env["CURSOR_AGENT_API_HOME"]) / "chats" / f"{chat_id}.json"
    return dict(json.loads(path.read_text()))


def init_event(proc: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert proc.returncode == 0, proc.stderr
    events = [orjson.loads(line) for line in proc.stdout.splitlines()]
    (init,) = [e for e in events if e["type"] == "system:init"]
    return dict(init["data"])


@pytest.fixture
def other(tmp_path: Path) -> Path:
    folder = tmp_path / "other"
    folder.mkdir()
    (folder / "only-here.txt").write_text("x\n")
    return folder


@pytest.fixture
def chat_id(cli_env: dict[str, str]) -> str:
    """A chat saved with the model sonnet-4.6, in the test's workspace."""
    first = run_in(cli_env, cli_env["TEST_WS"], "run", "--simulate", "--trust", "-m",
                   "sonnet-4.6", "-o", "json", "list the files")
    assert first.returncode == 0, first.stderr
    return str(orjson.loads(first.stdout)["session_id"])


def test_a_model_given_with_resume_wins(cli_env: dict[str, str], chat_id: str) -> None:
    again = run_in(cli_env, cli_env["TEST_WS"], "run", "--simulate", "--trust", "--resume",
                   chat_id, "-m", "gpt-5", "list the files")
    assert again.returncode == 0, again.stderr
    assert "GPT-5" in again.stdout.splitlines()[1], again.stdout.splitlines()[1]
    assert saved(cli_env, chat_id)["model"] == "gpt-5"  # and the chat goes on with it


def test_a_model_not_given_is_the_saved_one(cli_env: dict[str, str], chat_id: str) -> None:
    init = init_event(run_in(cli_env, cli_env["TEST_WS"], "run", "--simulate", "--trust",
                             "--resume", chat_id, "-o", "ndjson", "list the files"))
    assert "Sonnet" in str(init.get("model")), init


def test_a_workspace_not_given_is_the_saved_one(cli_env: dict[str, str], chat_id: str,
                                                other: Path) -> None:
    # run from another folder: the agent still works in the chat's own folder
    init = init_event(run_in(cli_env, other, "run", "--simulate", "--trust", "--resume",
                             chat_id, "-o", "ndjson", "list the files"))
    assert init["cwd"] == cli_env["TEST_WS"]
    assert saved(cli_env, chat_id)["workspace"] == cli_env["TEST_WS"]


@pytest.mark.parametrize("command", ["run", "chat"])
def test_another_workspace_given_with_resume_is_refused(cli_env: dict[str, str], chat_id: str,
                                                        other: Path, command: str) -> None:
    before = saved(cli_env, chat_id)
    args = [command, "--simulate", "--trust", "--resume", chat_id, "-w", str(other)]
    proc = run_in(cli_env, cli_env["TEST_WS"], *args, *(["list the files"] if command == "run" else []),
                  stdin="list the files\n")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert cli_env["TEST_WS"] in line and str(other) in line and "new chat" in line, line
    assert "only-here.txt" not in proc.stdout and "›" not in proc.stdout  # nothing ran
    assert saved(cli_env, chat_id) == before  # the chat's folder is still its own


def test_its_own_workspace_given_with_resume_runs(cli_env: dict[str, str], chat_id: str,
                                                  other: Path) -> None:
    # the same folder, written another way (relative, from elsewhere): the chat goes on
    init = init_event(run_in(cli_env, other, "run", "--simulate", "--trust", "--resume",
                             chat_id, "-w", os.path.relpath(cli_env["TEST_WS"], other),
                             "-o", "ndjson", "list the files"))
    assert init["cwd"] == cli_env["TEST_WS"]
    assert saved(cli_env, chat_id)["workspace"] == cli_env["TEST_WS"]


def test_chat_header_names_the_folder_the_agent_runs_in(cli_env: dict[str, str], chat_id: str,
                                                        other: Path) -> None:
    proc = run_in(cli_env, other, "chat", "--simulate", "--trust", "--resume", chat_id,
                  stdin="list the files\n")
    assert proc.returncode == 0, proc.stderr
    header = proc.stdout.splitlines()[1]
    assert f"in {cli_env['TEST_WS']} —" in header, header
    assert "notes.txt" in proc.stdout and "only-here.txt" not in proc.stdout
    (hint,) = [line for line in proc.stdout.splitlines() if line.startswith("continue later:")]
    assert f"--workspace {cli_env['TEST_WS']}" in hint  # the command works from here too


def test_a_saved_folder_that_is_no_path_is_left_to_the_damaged_chat_message(tmp_path: Path) -> None:
    # review 50: a NUL in the saved workspace made os.path.realpath raise ValueError, a traceback
    # where, without --workspace, the same file is reported as a damaged chat (sessions rm)
    from cursor_agent_api.cli.options import resumed_workspace
    from cursor_agent_api.cli.saved_chats import SavedChats
    from cursor_agent_api.config import AgentConfig
    from cursor_agent_api.sessions import ConversationSession

    chats, chat = SavedChats(tmp_path), "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
    path = chats.save(ConversationSession(AgentConfig(workspace=str(tmp_path)), session_id=chat))
    data = json.loads(Path(path).read_text())
    data["workspace"] = str(tmp_path) + "\x00"
    Path(path).write_text(json.dumps(data))
    resumed_workspace(chat, tmp_path, chats)  # no traceback: loading the chat says what is wrong
