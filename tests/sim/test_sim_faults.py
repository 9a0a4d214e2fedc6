"""Every CURSOR_AGENT_SIM_FAULT: the real exit code and stderr of PROTOCOL.md §1, and the
stream-level behaviour. Each test leaves no process behind (see conftest.kill_group)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from cursor_agent_api.protocol import EventType, ToolStatus, Transcript
from cursor_agent_api.sim.writer import split_chunks

from .conftest import Sim, group_members, kill_group, read_line, read_until

STREAM = ("-p", "--trust", "--output-format", "stream-json")


def fault(name: str, **extra: str) -> dict[str, str]:
    return {"CURSOR_AGENT_SIM_FAULT": name, **extra}


@pytest.mark.parametrize(
    ("name", "first_words"),
    [
        ("auth", "Error: Authentication required. Please run 'agent login' first, or set CURSOR_API_KEY"),
        ("trust", "╭"),
        ("invalid-model", "Cannot use this model: auto. Available models: "),
        ("usage-limit", "Error: You've hit your usage limit"),
        ("bad-resume", 'Failed to claim persistent session for chat "'),
        ("chat-busy", "Chat "),
    ],
)
def test_refusals_exit_1_with_the_real_message_and_nothing_on_stdout(
    sim: Sim, name: str, first_words: str
) -> None:
    run = sim.run(*STREAM, "list the files", env=fault(name))
    assert run.returncode == 1
    assert run.stdout == b""
    assert run.err.startswith(first_words), run.err
    if name == "trust":
        assert "⚠ Workspace Trust Required" in run.err and "Pass --trust, --yolo, or -f" in run.err
    if name == "bad-resume":
        assert run.err.rstrip().endswith("Persistent-session chat ID must be a UUID")
    if name == "chat-busy":
        assert "may still be running" in run.err


def test_invalid_api_key_and_key_sources(sim: Sim) -> None:
    run = sim.run(*STREAM, "hi", env={"CURSOR_API_KEY": "invalid-key"})
    assert run.returncode == 1 and run.stdout == b""
    assert "\x1b[" in run.err and "⚠ Warning: The provided API key is invalid." in run.err
    assert sim.run(*STREAM, "--api-key", "invalid", "hi").returncode == 1
    env_run = sim.run(*STREAM, "hi", env={"CURSOR_API_KEY": "key_123"}).transcript
    assert env_run.events[0].data["apiKeySource"] == "env"
    flag_run = sim.run(*STREAM, "--api-key", "key_123", "hi").transcript
    assert flag_run.events[0].data["apiKeySource"] == "flag"
    assert sim.run(*STREAM, "hi").transcript.events[0].data["apiKeySource"] == "login"


def test_unknown_model(sim: Sim) -> None:
    run = sim.run(*STREAM, "--model", "gpt-99", "hi")
    assert run.returncode == 1 and run.err.startswith("Cannot use this model: gpt-99. Available models: auto")


def test_crash_dies_mid_stream_without_result(sim: Sim) -> None:
    run = sim.run(*STREAM, "list the files", env=fault("crash"))
    assert run.returncode == 1
    assert "simulated crash" in run.err
    t = run.transcript
    assert not t.finished and t.result_text is None
    (call,) = t.tool_calls
    assert call.status is ToolStatus.ABANDONED  # started, never completed
    no_tools = sim.run(*STREAM, "--stream-partial-output", "What is 2+2?", env=fault("crash")).transcript
    assert not no_tools.finished and no_tools.events[0].type is EventType.SYSTEM_INIT


def test_exit1_after_result(sim: Sim) -> None:
    run = sim.run(*STREAM, "What is 2+2?", env=fault("exit1-after-result"))
    assert run.returncode == 1
    assert run.transcript.success and run.transcript.result_text == "4"


def test_hang_after_result_until_sigterm(sim: Sim) -> None:
    proc = sim.start(*STREAM, "What is 2+2?", env=fault("hang-after-result"))
    try:
        read_until(proc, b'"type":"result"')
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1.5)
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=60) == 143
        assert proc.stderr is not None and proc.stderr.read() == b""
    finally:
        kill_group(proc)


def test_silence_after_init_until_sigint(sim: Sim) -> None:
    proc = sim.start(*STREAM, "list the files", env=fault("silence"))
    try:
        assert b'"subtype":"init"' in read_line(proc)
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1.5)
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=60) == 130
        assert proc.stdout is not None and proc.stdout.read() == b""
        assert proc.stderr is not None and proc.stderr.read().decode().startswith("Aborting operation...")
    finally:
        kill_group(proc)


def test_sigterm_mid_stream_exits_143_silently(sim: Sim) -> None:
    proc = sim.start(*STREAM, "list the files", env=fault("slow", CURSOR_AGENT_SIM_DELAY="0.3"))
    try:
        read_line(proc)
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=60) == 143
        assert proc.stdout is not None and b'"type":"result"' not in proc.stdout.read()
        assert proc.stderr is not None and proc.stderr.read() == b""
    finally:
        kill_group(proc)


def test_ignore_sigterm_needs_sigkill_for_the_whole_group(sim: Sim) -> None:
    proc = sim.start(*STREAM, "What is 2+2?", env=fault("ignore-sigterm"))
    try:
        read_until(proc, b'"type":"result"')
        members = group_members(proc.pid)
        assert len(members) >= 2  # the agent and its stubborn child, in one group
        os.killpg(proc.pid, signal.SIGTERM)
        os.killpg(proc.pid, signal.SIGINT)
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1.5)
        assert set(members) <= set(group_members(proc.pid))  # nobody died
        os.killpg(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL
    finally:
        kill_group(proc)  # asserts the child is gone too


def test_stderr_flood_finishes_when_stderr_is_drained(sim: Sim) -> None:
    run = sim.run(*STREAM, "list the files", env=fault("stderr-flood"))
    assert run.returncode == 0
    assert len(run.stderr) >= 10 * 1024 * 1024
    assert run.transcript.success and run.transcript.text == run.transcript.result_text


def test_huge_line(sim: Sim) -> None:
    run = sim.run(*STREAM, "list the files", env=fault("huge-line"))
    assert run.returncode == 0
    assert max(len(line) for line in run.stdout.split(b"\n")) >= 20 * 1024 * 1024
    t = run.transcript
    assert t.success and t.text == t.result_text
    big = next(c for c in t.tool_calls if c.path and c.path.endswith("huge-line.log"))
    assert big.status is ToolStatus.SUCCEEDED and len(big.content or "") >= 20 * 1024 * 1024 - 100


def test_banner_lines_are_not_json(sim: Sim) -> None:
    run = sim.run(*STREAM, "--stream-partial-output", "list the files", env=fault("banner"))
    assert run.returncode == 0
    lines = run.stdout.split(b"\n")
    assert lines[0].startswith(b"\x1b[")
    t = run.transcript
    assert t.raw_lines >= 3
    assert t.success and t.text == t.result_text
    raw = [e for e in t.events if e.type is EventType.RAW]
    assert any("Cursor Agent" in (e.text or "") for e in raw)
    first_json = next(i for i, line in enumerate(lines) if line.startswith(b"{"))
    last_raw = max(i for i, line in enumerate(lines) if line.startswith(b"\x1b"))
    assert last_raw > first_json  # among the events, not only before


def test_slow_start_delays_init(sim: Sim) -> None:
    started = time.monotonic()
    proc = sim.start(*STREAM, "hi", env=fault("slow-start", CURSOR_AGENT_SIM_DELAY="1.0"))
    try:
        assert b'"subtype":"init"' in read_line(proc)
        assert time.monotonic() - started >= 1.0
        assert proc.wait(timeout=60) == 0
    finally:
        kill_group(proc)


def test_slow_delays_every_event(sim: Sim) -> None:
    started = time.monotonic()
    run = sim.run(*STREAM, "What is 2+2?", env=fault("slow", CURSOR_AGENT_SIM_DELAY="0.1"))
    events = run.stdout.count(b"\n")
    assert run.returncode == 0 and events >= 5
    assert time.monotonic() - started >= 0.1 * events


def test_split_writes_split_utf8_characters(sim: Sim) -> None:
    proc = sim.start(*STREAM, "--stream-partial-output", "list the files", env=fault("split-writes"))
    chunks: list[bytes] = []
    try:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        assert proc.wait(timeout=60) == 0
    finally:
        kill_group(proc)
    data = b"".join(chunks)
    assert len(chunks) > data.count(b"\n")  # lines arrived in pieces
    t = Transcript.from_bytes(data)
    assert t.success and t.text == t.result_text
    assert "naïve café — 日本語 ✓ 🚀" in t.text


def test_split_chunks_cut_a_multibyte_character() -> None:
    line = '{"text":"日本語 ✓"}\n'.encode()
    chunks = split_chunks(line)
    assert b"".join(chunks) == line
    undecodable = 0
    for c in chunks:
        try:
            c.decode()
        except UnicodeDecodeError:
            undecodable += 1
    assert undecodable >= 1


def test_faults_combine(sim: Sim) -> None:
    run = sim.run(*STREAM, "read notes.txt", env=fault("banner,split-writes,exit1-after-result"))
    assert run.returncode == 1
    t = run.transcript
    assert t.success and t.raw_lines >= 3 and t.tool_calls[0].content == "alpha\nbeta\n"


def test_unknown_fault_is_refused(sim: Sim) -> None:
    run = sim.run(*STREAM, "hi", env=fault("nope"))
    assert run.returncode == 1 and "unknown fault 'nope'" in run.err
