"""Turns against cursor-agent-sim (a real process), through the sync and the async client.

What needs no process (the lifecycle rules, the typed errors, partial output, timeouts)
runs on the script transport in ``test_client_script.py``; here: the simulator end to end,
process groups, signals, stdin and big pipes, the environment."""

from __future__ import annotations

import os
import signal

import pytest

from cursor_agent_api import (
    AgentNotFoundError,
    AgentProcessError,
    AgentTimeoutError,
    AuthenticationError,
    CursorAgentClient,
    EventType,
)


def assert_client_result(events, r):
    """The stream ends with exactly one result event: the one the client added."""
    last = events[-1]
    assert last.type is EventType.RESULT_ERROR and last.data["added_by_client"] is True
    assert last.exception is r.exception and last.data["error"] == r.error
    assert last.data["error_type"] == type(r.exception).__name__
    assert sum(e.is_result for e in events) == 1


def test_normal_turn_end_to_end(sim, run_stream):
    turn = run_stream(sim(stream_partial_output=True), "What is 2 + 2?")
    r = turn.result
    assert r.success and r.result.endswith("4") and r.exit_code == 0 and turn.pid is not None
    assert turn.types()[0] == "system:init" and turn.types()[-1] == "result:success"
    assert [e.type for e in r.events] == [e.type for e in turn.events]


def test_crash_end_to_end(sim, run_stream):
    turn = run_stream(sim("crash"), "What is 2 + 2?")
    r = turn.result
    assert not r.success and r.exit_code == 1 and isinstance(r.exception, AgentProcessError)
    assert "simulated crash" in r.stderr
    assert_client_result(turn.events, r)


def test_hang_after_result_is_stopped_after_grace(sim, run_query):
    r = run_query(sim("hang-after-result", result_grace=0.5), "What is 2 + 2?")
    assert r.success and r.result == "4"
    assert r.exit_code == 143  # our SIGTERM after the grace


def test_ignore_sigterm_with_child_is_killed(sim, run_query, spawned):
    r = run_query(sim("ignore-sigterm", result_grace=0.2, kill_grace=0.5), "What is 2 + 2?")
    assert r.success and r.result == "4"
    assert r.exit_code == 137  # SIGTERM ignored, SIGKILL after kill_grace
    assert len(spawned) == 1  # the autouse fixture checks its child is gone too


def test_20_mb_line_arrives_whole(sim, run_stream):
    turn = run_stream(sim("huge-line"), "What is 2 + 2?")
    r = turn.result
    assert r.success
    big = [e for e in turn.events if e.line is not None and len(e.line) > 19_000_000]
    assert len(big) == 1 and big[0].type is EventType.TOOL_CALL_COMPLETED
    call = next(tc for tc in r.tool_calls if tc.call_id == big[0].call_id)
    assert len(str(call.result)) > 19_000_000


def test_one_megabyte_prompt_on_stdin(sim, run_stream):
    chunk = "line ü→✓ 🚀 --resume x --api-key y -p \"quoted\" 'single' $HOME `ls`\n"
    prompt = (chunk * (1_000_000 // len(chunk.encode()) + 1)).strip()
    assert len(prompt.encode()) > 1_000_000
    turn = run_stream(sim(), prompt)
    user = [e for e in turn.events if e.type is EventType.USER]
    assert len(user) == 1 and user[0].text == prompt
    assert turn.result.success


def test_invalid_api_key_is_an_authentication_error(sim, run_query):
    r = run_query(sim(api_key="invalid-key"), "What is 2 + 2?")
    assert isinstance(r.exception, AuthenticationError)
    assert "API key is invalid" in r.error and "\x1b" not in r.error


def test_malformed_resume_id(sim, run_query):
    # refused before the agent starts (a chat id is a UUID); the agent's own refusal of a
    # resume is the bad-resume fault above
    with pytest.raises(ValueError, match="must be a UUID"):
        run_query(sim(), "What is 2 + 2?", resume="not-a-uuid")


def test_missing_binary_raises_agent_not_found(sim, flavour, tmp_path):
    import asyncio

    from cursor_agent_api import AsyncCursorAgentClient

    config = sim(agent_binary=str(tmp_path / "no-such-agent"))
    if flavour == "sync":
        with CursorAgentClient(config) as client:
            with pytest.raises(AgentNotFoundError, match="install"):
                client.query("hi")
            with pytest.raises(AgentNotFoundError, match="install"):
                client.query_stream("hi")
    else:
        client = AsyncCursorAgentClient(config)
        with pytest.raises(AgentNotFoundError, match="install"):
            asyncio.run(client.query("hi"))

        async def stream() -> None:
            async for _ in client.query_stream("hi"):
                pass

        with pytest.raises(AgentNotFoundError, match="install"):
            asyncio.run(stream())


def test_api_key_in_env_never_in_argv(sim):
    key = "sk-secret-test-key-123"
    config = sim("silence", api_key=key)
    with CursorAgentClient(config) as client, client.query_stream("What is 2 + 2?") as stream:
        first = next(iter(stream))  # system/init: the agent is running and silent
        assert first.type is EventType.SYSTEM_INIT
        assert first.data["apiKeySource"] == "env"
        pid = stream.pid
        assert pid is not None and stream.process is not None and stream.process.pid == pid
        assert os.getpgid(pid) == pid  # its own process group
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ = f.read().split(b"\0")
        assert not any(key.encode() in a for a in argv)
        assert b"--print" in argv and b"stream-json" in argv
        assert f"CURSOR_API_KEY={key}".encode() in environ
        stream.cancel()
    assert stream.result is not None and stream.result.cancelled


def test_env_is_parent_merged_with_config(sim, monkeypatch):
    monkeypatch.setenv("CAA_PARENT_VAR", "from-parent")
    config = sim("silence", env={"CAA_EXTRA": "from-config"})
    with CursorAgentClient(config) as client, client.query_stream("hi") as stream:
        next(iter(stream))
        with open(f"/proc/{stream.pid}/environ", "rb") as f:
            environ = f.read().split(b"\0")
        assert b"CAA_PARENT_VAR=from-parent" in environ
        assert b"CAA_EXTRA=from-config" in environ


def test_sigterm_from_outside_counts_as_cancelled(sim):
    with CursorAgentClient(sim("silence")) as client, client.query_stream("hi") as stream:
        events = iter(stream)
        next(events)
        assert stream.pid is not None
        os.kill(stream.pid, signal.SIGTERM)
        rest = list(events)
    r = stream.result
    assert r is not None and not r.success and r.cancelled and r.exit_code == 143
    assert rest[-2].type is EventType.ERROR and rest[-2].data["code"] == "interrupted"
    assert_client_result(rest, r)


def test_shell_child_left_behind_is_stopped(sim, run_query, spawned):
    # the agent's shell tool starts a background process and the turn ends normally: that
    # process is in the agent's group and must not outlive the turn
    r = run_query(sim(force_approve=True, kill_grace=0.5),
                  "run `sleep 300 > /dev/null 2>&1 &`")
    assert r.success and r.exit_code == 0
    assert any(tc.kind.value == "shell" for tc in r.tool_calls)
    assert len(spawned) == 1  # the autouse fixture checks the sleep is gone with the group


def test_timeout_while_a_shell_command_runs_stops_the_whole_group(sim, run_query):
    # the timeout counts the agent's start too: 4 s lets a loaded machine start the simulator
    # and reach the shell call first (with 2 s, a start of 2 s under load left no call)
    r = run_query(sim(force_approve=True, timeout=4.0, kill_grace=0.5), "run `sleep 300`")
    assert not r.success and isinstance(r.exception, AgentTimeoutError)
    assert r.exit_code in (143, 137)
    assert any(tc.kind.value == "shell" for tc in r.tool_calls)  # started, never completed
