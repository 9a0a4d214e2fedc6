"""From the terminal: ``run --acp --simulate`` and ``chat --acp --simulate`` on
``cursor-agent-sim acp`` through a real pseudo-terminal — a person approves a command and sees
it run; Ctrl-C cancels a turn and the chat goes on."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]


def spawn(tmp_path: Path, args: list[str], **env: str) -> tuple[pexpect.spawn, Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "marker.txt").write_text("x")
    full = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "40",
            "CURSOR_CONFIG_DIR": str(tmp_path / "cfg"), "CURSOR_AGENT_API_HOME": str(tmp_path / "home"),
            **env}
    full.pop("NO_COLOR", None)
    child = pexpect.spawn(CLI[0], [*CLI[1:], *args, "--acp", "--simulate"], env=full,
                          cwd=str(workspace), encoding="utf-8", timeout=60, dimensions=(40, 100))
    return child, workspace


def finish(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus is not None, child.signalstatus
    return int(child.exitstatus)


def test_run_asks_and_the_person_approves_and_sees_the_command_run(tmp_path: Path) -> None:
    child, _ = spawn(tmp_path, ["run", "run `ls`"])
    try:
        child.expect("the agent asks to use shell")
        child.expect(r"\$ ls")
        child.expect("Not in allowlist: ls")
        child.expect("allow once")
        child.sendline("a")
        # the answer, printed at the end: "ls exited with code 0. Output: … marker.txt" (the
        # command ran; the live region, redrawn at its rate, may never show a fast turn's text)
        child.expect("exited with code 0")
        child.expect("marker.txt")
        child.expect("--acp")  # the continue hint keeps the mode
        assert finish(child) == 0
    finally:
        child.terminate(force=True)


def test_ctrl_c_cancels_the_turn_and_the_chat_goes_on(tmp_path: Path) -> None:
    # 0.1 s per update: the poem goes on for about 3 s after "River" (34 more updates), so
    # Ctrl-C lands mid-turn.
    child, _ = spawn(tmp_path, ["chat"], CURSOR_AGENT_SIM_FAULT="slow", CURSOR_AGENT_SIM_DELAY="0.1")
    try:
        child.expect("› ")
        child.sendline("write a poem about the sea")
        child.expect("River")  # the poem has begun: the turn runs
        child.sendintr()
        child.expect("turn cancelled — the chat goes on")
        child.expect("› ")
        child.sendline("what did I ask before?")
        child.expect("write a poem about the sea")
        child.expect("› ")
        child.sendeof()
        child.expect("continue later: cursor-agent-api chat --resume .* --acp --simulate")
        assert finish(child) == 0
    finally:
        child.terminate(force=True)


def test_ctrl_c_while_the_agent_is_starting_cancels_the_turn_and_the_chat_goes_on(
        tmp_path: Path) -> None:
    """Ctrl-C before the first frame (``agent acp`` still starting): no "Aborted!", the chat
    goes on, and the next prompt runs."""
    child, _ = spawn(tmp_path, ["chat"], CURSOR_AGENT_SIM_FAULT="slow-start",
                     CURSOR_AGENT_SIM_DELAY="3")
    try:
        child.expect("› ")
        child.sendline("say hello")
        child.expect("working")  # the turn's view: the agent is still starting
        child.sendintr()
        child.expect("turn cancelled — the chat goes on")
        child.expect("› ")
        child.sendline("what is 2+2?")
        child.expect("4")
        child.expect("› ")
        child.sendeof()
        assert finish(child) == 0
    finally:
        child.terminate(force=True)


def test_an_allow_rule_for_ls_does_not_approve_ls_and_then_rm(tmp_path: Path) -> None:
    """The review's repro (2026-11-24): without a terminal, ``--allow 'Shell(ls)'`` approved
    ``ls && rm important.txt`` and the file was gone. Now the compound command is rejected
    (no rule covers its ``rm``; the mode, deny, decides) and ``ls`` alone still runs."""
    import subprocess

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "important.txt").write_text("keep me")
    env = {**os.environ, "CURSOR_CONFIG_DIR": str(tmp_path / "cfg"),
           "CURSOR_AGENT_API_HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    base = [*CLI, "run", "--acp", "--simulate", "--trust", "--allow", "Shell(ls)", "--output", "text"]

    def run(prompt: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, prompt], env=env, cwd=workspace, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=60)

    compound = run("run `ls && rm important.txt`")
    assert compound.returncode == 0, compound.stderr
    assert "ls && rm important.txt  rejected" in compound.stdout
    assert (workspace / "important.txt").read_text() == "keep me"
    alone = run("run `ls`")
    assert alone.returncode == 0, alone.stderr
    assert "✓ shell ls" in alone.stdout and "important.txt" in alone.stdout
