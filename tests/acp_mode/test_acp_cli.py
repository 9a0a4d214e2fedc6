"""``run --acp`` and ``chat --acp`` through a real pseudo-terminal, against the fake agent."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect
from acp_fake import FakeAgent

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]


def spawn(fake: FakeAgent, args: list[str]) -> pexpect.spawn:
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "40",
           "FAKE_ACP_DIR": str(fake.state), "FAKE_ACP_LOG": str(fake.log),
           "CURSOR_AGENT_API_HOME": str(fake.root / "home")}
    env.pop("NO_COLOR", None)
    return pexpect.spawn(CLI[0], [*CLI[1:], *args, "--acp", "--agent-binary", str(fake.binary)],
                         env=env, cwd=str(fake.workspace), encoding="utf-8", timeout=60,
                         dimensions=(40, 100))


def finish(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus is not None, child.signalstatus
    return int(child.exitstatus)


def test_run_asks_before_a_command_and_the_person_approves(fake: FakeAgent) -> None:
    child = spawn(fake, ["run", "run ls -la"])
    try:
        child.expect("the agent asks to use shell")
        child.expect(r"\$ ls -la")
        child.expect("Not in allowlist: ls")
        child.expect("allow once")
        child.sendline("a")
        # the tool line, then the answer (what stays printed: the live region, which drew the
        # answer's text too, is redrawn at its rate, so a fast turn's text may never be in it)
        child.expect("succeeded")  # ("✓ shell ls -la  succeeded": styles between the words)
        child.expect("I ran ls -la.")
        child.expect("--acp")  # the continue hint keeps the mode
        assert finish(child) == 0
    finally:
        child.terminate(force=True)


def test_run_reject_shows_rejected(fake: FakeAgent) -> None:
    child = spawn(fake, ["run", "run rm -rf /"])
    try:
        child.expect(r"\$ rm -rf /")
        # the prompt, not only the command: type-ahead before the prompt shows is flushed
        child.expect(r"reject \(default\) › ")
        child.sendline("r")
        child.expect("rejected")  # the tool line: rejected, though Cursor says "completed"
        child.expect(r"was not allowed \(reject-once\)")
        assert finish(child) == 0
    finally:
        child.terminate(force=True)


def test_chat_answers_a_question_inline_and_ctrl_c_keeps_the_chat(fake: FakeAgent) -> None:
    child = spawn(fake, ["chat"])
    try:
        child.expect("› ")
        child.sendline("ask")
        child.expect("Which approach")
        child.expect("2. Full rewrite")
        child.expect(r"number \(Enter skips\) › ")  # (type-ahead before it is flushed)
        child.sendline("2")
        child.expect('"selectedOptionIds": \\["full"\\]')
        child.expect("› ")
        child.sendline("slow")
        child.expect(r"\d+\.\d s")
        child.sendintr()
        child.expect("turn cancelled — the chat goes on")
        child.expect("› ")
        child.sendline("history")
        child.expect(r"earlier: ask \| slow")
        child.expect("› ")
        child.sendeof()
        child.expect("continue later: cursor-agent-api chat --resume .* --acp")
        assert finish(child) == 0
    finally:
        child.terminate(force=True)


def test_run_without_a_terminal_rejects_unless_allowed(fake: FakeAgent, tmp_path: Path) -> None:
    import subprocess

    env = {**os.environ, "FAKE_ACP_DIR": str(fake.state), "FAKE_ACP_LOG": str(fake.log),
           "CURSOR_AGENT_API_HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    base = [*CLI, "run", "--acp", "--agent-binary", str(fake.binary), "--output", "text"]
    denied = subprocess.run([*base, "run ls"], env=env, cwd=fake.workspace, stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=60)
    allowed = subprocess.run([*base, "--allow", "Shell(ls)", "run ls"], env=env, cwd=fake.workspace,
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert denied.returncode == 0 and "ls was not allowed (reject-once)" in denied.stdout
    assert allowed.returncode == 0 and "I ran ls." in allowed.stdout
    bad = subprocess.run([*CLI, "run", "--allow", "Shell(ls)", "hi"], env=env, cwd=fake.workspace,
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--allow and --deny need --acp" in bad.stderr


def test_ctrl_c_at_a_permission_prompt_cancels_the_turn_and_the_chat_goes_on(
        fake: FakeAgent) -> None:
    child = spawn(fake, ["chat"])
    try:
        child.expect("› ")
        child.sendline("run make deploy")
        child.expect("allow once")
        child.sendintr()
        child.expect("turn cancelled — the chat goes on")
        child.expect("› ")
        child.sendline("history")  # the line goes to the chat, not to a forgotten prompt
        child.expect(r"earlier: run make deploy")
        child.expect("› ")
        child.sendeof()
        assert finish(child) == 0
    finally:
        child.terminate(force=True)
