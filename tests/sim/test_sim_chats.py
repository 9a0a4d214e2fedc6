"""Chats: persistence under CURSOR_CONFIG_DIR, --resume across processes, the run lock,
create-chat, and workspace trust."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import Sim, kill_group, read_line, read_until

STREAM = ("-p", "--trust", "--output-format", "stream-json")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def test_resume_continues_the_chat_across_processes(sim: Sim, ws: Path) -> None:
    first = sim.run(*STREAM, "Remember that the code word is BLUE").transcript
    chat_id = first.session_id
    assert chat_id and UUID.match(chat_id)
    chat_dir = sim.config_dir / "chats" / hashlib.md5(str(ws.resolve()).encode()).hexdigest() / chat_id
    assert (chat_dir / "meta.json").exists() and (chat_dir / "turns.jsonl").exists()
    assert not (chat_dir / "run.lock").exists()

    second = sim.run(*STREAM, "--resume", chat_id, "What did I ask you to remember?").transcript
    assert second.session_id == chat_id
    assert "the code word is BLUE" in second.text
    third = sim.run(*STREAM, "--resume", chat_id, "What did I ask before?").transcript
    assert third.session_id == chat_id
    assert 'you asked: "What did I ask you to remember?"' in third.text
    assert third.request_id not in (first.request_id, second.request_id)
    fresh = sim.run(*STREAM, "What did I ask before?").transcript
    assert fresh.session_id != chat_id and "first message" in fresh.text


def test_a_killed_turn_is_not_saved(sim: Sim) -> None:
    chat_id = sim.run(*STREAM, "hello").transcript.session_id
    assert chat_id
    proc = sim.start(*STREAM, "--resume", chat_id, "lost prompt", env={"CURSOR_AGENT_SIM_FAULT": "silence"})
    try:
        read_line(proc)
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=60) == 143
    finally:
        kill_group(proc)
    t = sim.run(*STREAM, "--resume", chat_id, "what did I ask before?").transcript
    assert 'you asked: "hello"' in t.text


def test_malformed_resume_id(sim: Sim) -> None:
    run = sim.run(*STREAM, "--resume", "not-a-uuid", "hi")
    assert run.returncode == 1 and run.stdout == b""
    assert run.err.strip() == (
        'Failed to claim persistent session for chat "not-a-uuid": Persistent-session chat ID must be a UUID'
    )


def test_unknown_well_formed_id_starts_that_chat(sim: Sim) -> None:
    chat_id = "11111111-2222-4333-8444-555555555555"
    t = sim.run(*STREAM, "--resume", chat_id, "what did I ask before?").transcript
    assert t.success and t.session_id == chat_id and "first message" in t.text


def test_second_concurrent_turn_on_one_chat_fails_and_a_stale_lock_does_not(sim: Sim) -> None:
    chat_id = sim.run(*STREAM, "hello").transcript.session_id
    assert chat_id
    holder = sim.start(*STREAM, "--resume", chat_id, "slow one", env={"CURSOR_AGENT_SIM_FAULT": "silence"})
    try:
        read_line(holder)  # init written: the turn holds the chat
        busy = sim.run(*STREAM, "--resume", chat_id, "second")
        assert busy.returncode == 1 and busy.stdout == b""
        assert busy.err.startswith(f"Chat {chat_id} may still be running")
        other = sim.run(*STREAM, "a different chat is fine")
        assert other.returncode == 0
        os.killpg(holder.pid, signal.SIGKILL)  # no chance to clean up: the lock stays behind
        holder.wait(timeout=60)
    finally:
        kill_group(holder)
    lock = next(sim.config_dir.glob(f"chats/*/{chat_id}/run.lock"))
    assert lock.read_text() == str(holder.pid)
    after = sim.run(*STREAM, "--resume", chat_id, "what did I ask before?")
    assert after.returncode == 0, after.err
    assert 'you asked: "hello"' in after.transcript.text


def test_create_chat_prints_a_uuid_and_keeps_running(sim: Sim) -> None:
    proc = sim.start("create-chat")
    try:
        chat_id = read_line(proc).decode().strip()
        assert UUID.match(chat_id)
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1.5)
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=60) == 143
    finally:
        kill_group(proc)
    t = sim.run(*STREAM, "--resume", chat_id, "What is 1 + 1?").transcript
    assert t.session_id == chat_id and t.result_text == "2"


def test_untrusted_workspace(sim: Sim, ws: Path) -> None:
    run = sim.run("-p", "--output-format", "stream-json", "hi")
    assert run.returncode == 1 and run.stdout == b""
    assert "⚠ Workspace Trust Required" in run.err and "Pass --trust, --yolo, or -f" in run.err
    assert str(ws.resolve()) in run.err
    forced = sim.run("-p", "-f", "--output-format", "stream-json", "hi")
    assert forced.returncode == 0  # --force proceeds but records nothing
    assert sim.run("-p", "--output-format", "stream-json", "hi").returncode == 1
    assert sim.run(*STREAM, "hi").returncode == 0  # --trust records the workspace...
    again = sim.run("-p", "--output-format", "stream-json", "hi")
    assert again.returncode == 0, again.err  # ...so later runs need no flag
    assert str(ws.resolve()) in (sim.config_dir / "trusted-workspaces.json").read_text()


def test_workspace_flag(sim: Sim, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "only-here.txt").write_text("x\n")
    t = sim.run(*STREAM, "--workspace", str(other), "list the files").transcript
    assert t.cwd == str(other.resolve()) and "only-here.txt" in t.text
    missing = sim.run(*STREAM, "--workspace", str(tmp_path / "missing"), "hi")
    assert missing.returncode == 1 and "does not exist" in missing.err


def test_read_until_helper_sees_the_result(sim: Sim) -> None:
    proc = sim.start(*STREAM, "hi")
    try:
        assert read_until(proc, b'"type":"result"')[-1].startswith(b'{"type":"result"')
        assert proc.wait(timeout=60) == 0
    finally:
        kill_group(proc)


def test_a_lock_held_by_a_zombie_is_stale(sim: Sim) -> None:
    chat_id = sim.run(*STREAM, "hello").transcript.session_id
    assert chat_id
    holder = sim.start(*STREAM, "--resume", chat_id, "slow one", env={"CURSOR_AGENT_SIM_FAULT": "silence"})
    try:
        read_line(holder)
        os.kill(holder.pid, signal.SIGKILL)  # killed, not reaped yet: a zombie
        while Path(f"/proc/{holder.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            time.sleep(0.02)
        after = sim.run(*STREAM, "--resume", chat_id, "again")
        assert after.returncode == 0, after.err
    finally:
        kill_group(holder)


def test_asking_twice_what_to_remember_recalls_the_remember_prompt(sim: Sim) -> None:
    """The question itself is not a thing to remember: the second time it is asked, the
    answer is still the earlier ``remember …`` prompt (issue 12, point 8)."""
    chat_id = sim.run(*STREAM, "Remember that the code word is BLUE").transcript.session_id
    assert chat_id
    answers = [
        sim.run(*STREAM, "--resume", chat_id, "What did I ask you to remember?").transcript.text
        for _ in range(2)
    ]
    assert answers == ["You asked me to remember: the code word is BLUE"] * 2
