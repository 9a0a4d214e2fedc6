"""The live view and the chat, through a real pseudo-terminal (pexpect)."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

import pexpect

from cursor_agent_api.protocol import strip_ansi

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]


def spawn(args: list[str], env: dict[str, str], extra: dict[str, str] | None = None
          ) -> pexpect.spawn:
    env = {**env, **(extra or {}), "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "40"}
    env.pop("NO_COLOR", None)
    child = pexpect.spawn(CLI[0], [*CLI[1:], *args], env=env, cwd=env["TEST_WS"],
                          encoding="utf-8", timeout=60, dimensions=(40, 100))
    return child


def finish(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus is not None, child.signalstatus
    return int(child.exitstatus)


def killed_by(child: pexpect.spawn) -> int:
    """The signal the command died from (a Ctrl-C: SIGINT, so that a shell loop stops)."""
    child.expect(pexpect.EOF)
    child.close()
    assert child.signalstatus is not None, child.exitstatus
    return int(child.signalstatus)


def test_live_run_shows_progress_then_the_answer(cli_env: dict[str, str]) -> None:
    child = spawn(["run", "--simulate", "--trust", "--force", "run ls -la"], cli_env,
                  {"CURSOR_AGENT_SIM_FAULT": "slow", "CURSOR_AGENT_SIM_DELAY": "0.05"})
    try:
        child.expect("SIMULATED")
        child.expect(r"\d+\.\d s")  # the spinner's elapsed time
        child.expect("✓")  # the tool line turned to its outcome
        child.expect("shell")
        child.expect("notes.txt")  # in the final answer
        child.expect("done")
        child.expect("continue: cursor-agent-api chat --resume")
        assert finish(child) == 0
    finally:
        child.terminate(force=True)


def test_ctrl_c_in_run_cancels_then_dies_from_the_sigint(cli_env: dict[str, str]) -> None:
    child = spawn(["run", "--simulate", "--trust", "write a poem"], cli_env,
                  {"CURSOR_AGENT_SIM_FAULT": "slow", "CURSOR_AGENT_SIM_DELAY": "0.5"})
    try:
        child.expect(r"\d+\.\d s")
        child.sendintr()
        child.expect("cancelled")
        assert killed_by(child) == signal.SIGINT
    finally:
        child.terminate(force=True)


def test_chat_ctrl_c_cancels_the_turn_and_the_chat_goes_on(cli_env: dict[str, str]) -> None:
    # Each turn paced (8 events) so that the second one is still going when Ctrl-C comes, right
    # after its spinner shows (a turn over first fails the test: no "turn cancelled").
    child = spawn(["chat", "--simulate", "--trust"], cli_env,
                  {"CURSOR_AGENT_SIM_FAULT": "slow", "CURSOR_AGENT_SIM_DELAY": "0.1"})
    try:
        child.expect("Ctrl-D leaves")
        child.expect("› ")
        child.sendline("remember the codeword: heron")
        child.expect("Noted")
        child.expect("done")
        child.expect("› ")
        child.sendline("write a poem about rivers")
        child.expect(r"\d+\.\d s")
        child.sendintr()
        child.expect("turn cancelled — the chat goes on")
        child.expect("› ")
        child.sendline("what did I ask you to remember?")
        child.expect("heron", timeout=120)
        child.expect("done")
        child.expect("› ")
        child.sendeof()
        child.expect("continue later: cursor-agent-api chat --resume")
        assert finish(child) == 0
    finally:
        child.terminate(force=True)


def test_ctrl_c_on_replay_stdin_dies_from_the_sigint(cli_env: dict[str, str]) -> None:
    child = spawn(["replay", "-"], cli_env)
    try:
        child.sendline('{"type":"assistant","message":{"content":"first line"}}')
        child.expect("\nfirst line")  # rendered (the terminal's echo has the JSON around it)
        child.sendintr()
        assert killed_by(child) == signal.SIGINT
    finally:
        child.terminate(force=True)


def test_replay_of_a_binary_writes_no_binary_to_the_terminal(cli_env: dict[str, str]) -> None:
    child = spawn(["replay", "/bin/true"], cli_env)
    try:
        child.expect("not a stream-json recording")
        assert finish(child) == 1
        assert "ELF" not in (child.before or "")
    finally:
        child.terminate(force=True)


def test_sessions_list_at_80_columns_shows_whole_ids(cli_env: dict[str, str]) -> None:
    from pathlib import Path

    from cursor_agent_api import ConversationSession
    from cursor_agent_api.sessions import SessionTurn

    chat_id = "1a89ecf3-b56a-4d6e-8f00-2b9d8c1e0a11"
    home = Path(cli_env["CURSOR_AGENT_API_HOME"]) / "chats"
    home.mkdir(parents=True)
    session = ConversationSession(trust=True, session_id=chat_id,
                                  workspace=cli_env["TEST_WS"])
    session.history.append(SessionTurn("a long first prompt " * 5, "ok", True, chat_id))
    session.save(home / f"{chat_id}.json")
    session.close()
    env = {**cli_env, "COLUMNS": "80"}
    child = pexpect.spawn(CLI[0], [*CLI[1:], "sessions", "list"], env=env, encoding="utf-8",
                          timeout=60, dimensions=(40, 80))
    try:
        child.expect(pexpect.EOF)
        assert chat_id in (child.before or "")
    finally:
        child.terminate(force=True)


def test_a_failed_live_run_says_it_once_in_the_cli_words(cli_env: dict[str, str]) -> None:
    child = spawn(["run", "--simulate", "list the files"], cli_env)  # an untrusted workspace
    try:
        child.expect(pexpect.EOF)
        out = child.before or ""
        child.close()
        assert child.exitstatus == 1
        assert out.count("Workspace Trust Required") == 1
        assert "--trust" in out and "trust=True" not in out and "error:" not in out
    finally:
        child.terminate(force=True)


def test_live_run_shows_two_calls_with_one_id_as_two_lines(cli_env: dict[str, str],
                                                           tmp_path: Path) -> None:
    """A publisher that redacted every call id: two calls run at once under one id."""
    sid = "8ef40118-8378-436d-8ba8-2436b19cc877"

    def call(subtype: str, key: str, path: str) -> dict[str, Any]:
        inner: dict[str, Any] = {"args": {"path": path}}
        if subtype == "completed":
            inner["result"] = {"success": {}}
        return {"type": "tool_call", "subtype": subtype, "call_id": "<redacted>",
                "tool_call": {key: inner}, "session_id": sid}

    script = tmp_path / "redacted.ndjson"
    lines = [
        {"type": "system", "subtype": "init", "cwd": "/ws", "session_id": sid, "model": "m"},
        call("started", "lsToolCall", "src"), call("started", "readToolCall", "notes.txt"),
        call("completed", "lsToolCall", "src"), call("completed", "readToolCall", "notes.txt"),
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "Both read."}]},
         "session_id": sid},
        {"type": "result", "subtype": "success", "result": "Both read.", "session_id": sid},
    ]
    script.write_text("".join(json.dumps(line) + "\n" for line in lines))
    child = spawn(["run", "--simulate", "--trust", "look"], cli_env,
                  {"CURSOR_AGENT_SIM_SCRIPT": str(script)})
    try:
        child.expect(pexpect.EOF)
        out = strip_ansi(child.before or "")
        child.close()
        assert child.exitstatus == 0
        assert "✓ ls src  succeeded" in out
        assert "✓ read notes.txt  succeeded" in out
        assert "Both read." in out
    finally:
        child.terminate(force=True)
