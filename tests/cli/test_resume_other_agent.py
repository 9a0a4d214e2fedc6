"""``--resume`` of a saved chat on another agent than the one that made it: the simulator
(``--simulate``) and Cursor's agent keep their chats apart (README "Where chats live"), so the
other would have no such chat and start afresh under its id, mixing both in the saved file.
Refused in one line (exit 2) before any prompt is read, as ``--acp`` on a print-mode chat is;
the saved file is left as it was. Audit 12."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

Cli = Callable[..., subprocess.CompletedProcess[str]]

REMEMBER = "remember that the deploy target is eu-west-1"
RECALL = "what did I ask you to remember?"


@pytest.fixture
def real_agent(tmp_path: Path, cli_env: dict[str, str]) -> dict[str, str]:
    """``agent`` on PATH standing in for Cursor's: the simulator under another name, with its
    own store, as the real CLI has."""
    from cursor_agent_api.testing import sim_binary

    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "agent").write_text(
        f'#!/bin/sh\nCURSOR_CONFIG_DIR="{tmp_path}/real-store" exec {sim_binary()} "$@"\n')
    (shims / "agent").chmod(0o755)
    return {"PATH": f"{shims}{os.pathsep}{cli_env['PATH']}"}


def saved_file(env: dict[str, str], chat_id: str) -> Path:
    return Path(env["CURSOR_AGENT_API_HOME"]) / "chats" / f"{chat_id}.json"


def one_chat(cli: Cli, real_agent: dict[str, str], *simulate: str) -> str:
    first = cli("run", *simulate, "--trust", "-o", "json", REMEMBER, extra_env=real_agent)
    assert first.returncode == 0, first.stderr
    return str(orjson.loads(first.stdout)["session_id"])


@pytest.mark.parametrize("command", ["chat", "run"])
def test_a_simulated_chat_is_not_continued_on_the_real_agent(
        cli: Cli, cli_env: dict[str, str], real_agent: dict[str, str], command: str) -> None:
    chat_id = one_chat(cli, real_agent, "--simulate")
    before = saved_file(cli_env, chat_id).read_bytes()
    args = ["--trust", "--resume", chat_id[:8]] + ([RECALL] if command == "run" else [])
    proc = cli(command, *args, stdin=RECALL + "\n", extra_env=real_agent)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert chat_id in line and "--simulate" in line and "new chat" in line, line
    assert "›" not in proc.stdout  # no prompt read, no turn run
    assert saved_file(cli_env, chat_id).read_bytes() == before
    again = cli(command, *args, "--simulate", stdin=RECALL + "\n", extra_env=real_agent)
    assert again.returncode == 0, again.stderr
    assert "eu-west-1" in again.stdout  # with --simulate it goes on, with its conversation


@pytest.mark.parametrize("command", ["chat", "run"])
def test_a_real_chat_is_not_continued_on_the_simulator(
        cli: Cli, cli_env: dict[str, str], real_agent: dict[str, str], command: str) -> None:
    chat_id = one_chat(cli, real_agent)
    before = saved_file(cli_env, chat_id).read_bytes()
    args = ["--trust", "--resume", chat_id, "--simulate"] + ([RECALL] if command == "run" else [])
    proc = cli(command, *args, stdin=RECALL + "\n", extra_env=real_agent)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert chat_id in line and "without --simulate" in line and "new chat" in line, line
    assert saved_file(cli_env, chat_id).read_bytes() == before
    assert json.loads(before)["config"]["agent_binary"] == "agent"
