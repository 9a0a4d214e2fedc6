"""``--resume`` of a saved chat keeps the chat's transport: the agent can load a chat only
over the transport that made it (docs/acp.md). Without ``--acp`` a chat saved in ACP mode
resumes in ACP mode (the agent remembers it); ``--acp`` on a chat saved in print mode is
refused in one line (exit 2), before any prompt is read; the saved file never changes
transport."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

Cli = Callable[..., subprocess.CompletedProcess[str]]

REMEMBER = "remember the codeword heron"
RECALL = "what did I ask you to remember?"


def saved_file(env: dict[str, str], chat_id: str) -> Path:
    return Path(env["CURSOR_AGENT_API_HOME"]) / "chats" / f"{chat_id}.json"


def transport_of(env: dict[str, str], chat_id: str) -> str:
    return str(json.loads(saved_file(env, chat_id).read_text())["config"]["transport"])


def new_chat(cli: Cli, *transport: str) -> str:
    first = cli("run", *transport, "--simulate", "--trust", "-o", "json", REMEMBER)
    assert first.returncode == 0, first.stderr
    return str(orjson.loads(first.stdout)["session_id"])


@pytest.fixture
def acp_chat(cli: Cli, cli_env: dict[str, str]) -> str:
    chat_id = new_chat(cli, "--acp")
    assert transport_of(cli_env, chat_id) == "acp"
    return chat_id


@pytest.fixture
def print_chat(cli: Cli, cli_env: dict[str, str]) -> str:
    chat_id = new_chat(cli)
    assert transport_of(cli_env, chat_id) == "print"
    return chat_id


def test_run_resume_of_an_acp_chat_without_acp_resumes_it_in_acp(
        cli: Cli, cli_env: dict[str, str], acp_chat: str) -> None:
    again = cli("run", "--resume", acp_chat, "--simulate", "--trust", "-o", "json", RECALL)
    assert again.returncode == 0, again.stderr
    out = orjson.loads(again.stdout)
    assert "the codeword heron" in out["result"], out["result"]  # the agent remembers
    assert out["session_id"] == acp_chat
    assert transport_of(cli_env, acp_chat) == "acp"
    assert len(json.loads(saved_file(cli_env, acp_chat).read_text())["history"]) == 2


def test_chat_resume_of_an_acp_chat_without_acp_resumes_it_in_acp(
        cli: Cli, cli_env: dict[str, str], acp_chat: str) -> None:
    again = cli("chat", "--resume", acp_chat, "--simulate", "--trust", stdin=RECALL + "\n")
    assert again.returncode == 0, again.stderr
    assert "You asked me to remember: the codeword heron" in again.stdout, again.stdout
    assert transport_of(cli_env, acp_chat) == "acp"
    # the continue hints name the chat's transport: the command shown continues it
    hints = [line for line in again.stdout.splitlines() if "continue" in line]
    assert hints and all(f"--resume {acp_chat} --acp --simulate" in h for h in hints), hints


def test_a_resumed_acp_chat_takes_allow_and_deny_without_acp(
        cli: Cli, cli_env: dict[str, str], acp_chat: str) -> None:
    again = cli("run", "--resume", acp_chat, "--allow", "Shell(ls)", "--simulate", "--trust",
                "-o", "json", RECALL)
    assert again.returncode == 0, again.stderr
    assert "the codeword heron" in orjson.loads(again.stdout)["result"]


@pytest.mark.parametrize("command", ["run", "chat"])
def test_acp_on_a_print_chat_is_refused_in_one_line(
        cli: Cli, cli_env: dict[str, str], print_chat: str, command: str) -> None:
    before = saved_file(cli_env, print_chat).read_bytes()
    args = [command, "--resume", print_chat[:8], "--acp", "--simulate", "--trust"]
    refused = cli(*args, *([RECALL] if command == "run" else []), stdin=RECALL + "\n")
    assert refused.returncode == 2, (refused.stdout, refused.stderr)
    assert refused.stdout == ""  # no turn, no banner: nothing ran
    (line,) = refused.stderr.strip().splitlines()  # one line, no traceback, no usage block
    assert print_chat in line and "print mode" in line, line
    assert "without --acp" in line and "new chat" in line, line  # what to do
    assert saved_file(cli_env, print_chat).read_bytes() == before  # the file as it was


def test_a_print_chat_resumed_without_acp_stays_in_print_mode(
        cli: Cli, cli_env: dict[str, str], print_chat: str) -> None:
    again = cli("run", "--resume", print_chat, "--simulate", "--trust", "-o", "json", RECALL)
    assert again.returncode == 0, again.stderr
    assert "the codeword heron" in orjson.loads(again.stdout)["result"]
    assert transport_of(cli_env, print_chat) == "print"


@pytest.mark.parametrize("shape", ["version 1", "version 2 without transport"])
def test_acp_on_a_chat_saved_before_transports_is_refused_as_print(
        cli: Cli, cli_env: dict[str, str], print_chat: str, shape: str) -> None:
    """A file that records no transport was saved before ACP mode existed: a print chat
    (``sessions list`` shows it so); ``--acp`` is refused for it as for any print chat (it
    ran over ACP, and the agent, which cannot load a print chat there, forgot it)."""
    path = saved_file(cli_env, print_chat)
    data = json.loads(path.read_text())
    if shape == "version 1":
        data = {k: data[k] for k in ("chat_id", "workspace", "model", "history")} | {"version": 1}
    else:
        del data["config"]["transport"]
    path.write_text(json.dumps(data))
    refused = cli("run", "--resume", print_chat, "--acp", "--simulate", "--trust", RECALL)
    assert refused.returncode == 2, (refused.stdout, refused.stderr)
    (line,) = refused.stderr.strip().splitlines()
    assert print_chat in line and "print mode" in line, line
    assert json.loads(path.read_text()) == data  # the file as it was
