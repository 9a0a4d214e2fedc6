"""Turns against cursor-agent-sim, through the sync and the async client (``flavour``)."""

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
    InvalidModelError,
    ProtocolError,
    SessionError,
    UsageLimitError,
    WorkspaceTrustError,
)


def assert_client_result(events, r):
    """The stream ends with exactly one result event: the one the client added."""
    last = events[-1]
    assert last.type is EventType.RESULT_ERROR and last.data["added_by_client"] is True
    assert last.exception is r.exception and last.data["error"] == r.error
    assert last.data["error_type"] == type(r.exception).__name__
    assert sum(e.is_result for e in events) == 1


def test_normal_turn(sim, run_stream):
    turn = run_stream(sim(), "What is 2 + 2?")
    r = turn.result
    assert r.success and r.exception is None and r.error is None
    assert r.result == "4" and r.text == "4"
    assert r.exit_code == 0
    assert turn.types()[0] == "system:init" and turn.types()[-1] == "result:success"
    assert r.session_id and r.session_id == turn.events[0].session_id
    assert [e.type for e in r.events] == [e.type for e in turn.events]


def test_query_result(sim, run_query):
    r = run_query(sim(), "What is 6 * 7?")
    assert r.success and r.result == "42" and r.exit_code == 0 and r.stderr == ""
    assert r.usage is not None and r.duration_ms is not None


def test_partial_output_is_not_doubled(sim, run_stream):
    turn = run_stream(sim(stream_partial_output=True), "Write a poem about pipes")
    deltas = [e for e in turn.events if e.type is EventType.ASSISTANT_DELTA]
    assert len(deltas) > 1
    r = turn.result
    assert r.success
    assert r.text == r.result  # the recap replaced its deltas
    assert "".join(d.text or "" for d in deltas).strip() in r.result


def test_crash_mid_stream(sim, run_stream):
    turn = run_stream(sim("crash"), "What is 2 + 2?")
    r = turn.result
    assert not r.success and r.exit_code == 1 and not r.cancelled
    assert isinstance(r.exception, AgentProcessError)
    assert "simulated crash" in r.error and "simulated crash" in r.stderr
    assert r.exception.exit_code == 1 and "simulated crash" in (r.exception.stderr or "")
    # the partial transcript is kept, and the failure arrived as an ERROR event, then the
    # RESULT_ERROR the client adds (the agent wrote none)
    assert turn.types()[0] == "system:init"
    assert turn.events[-2].type is EventType.ERROR
    assert turn.events[-2].data["code"] == "exit" and turn.events[-2].data["exit_code"] == 1
    assert_client_result(turn.events, r)
    assert "result:success" not in turn.types()
    with pytest.raises(AgentProcessError):
        r.raise_for_error()


def test_hang_after_result_is_stopped_after_grace(sim, run_query):
    r = run_query(sim("hang-after-result", result_grace=0.5), "What is 2 + 2?")
    assert r.success and r.result == "4"
    assert r.exit_code == 143  # our SIGTERM after the grace


def test_hang_after_result_default_grace(sim, run_query):
    config = sim("hang-after-result")
    config = config.with_overrides(result_grace=3.0)
    r = run_query(config, "What is 2 + 2?")
    assert r.success and r.exit_code == 143


def test_exit1_after_valid_result_is_success(sim, run_query):
    r = run_query(sim("exit1-after-result"), "What is 2 + 2?")
    assert r.success and r.result == "4" and r.exit_code == 1 and r.exception is None


def test_ignore_sigterm_with_child_is_killed(sim, run_query, spawned):
    r = run_query(sim("ignore-sigterm", result_grace=0.2, kill_grace=0.5), "What is 2 + 2?")
    assert r.success and r.result == "4"
    assert r.exit_code == 137  # SIGTERM ignored, SIGKILL after kill_grace
    assert len(spawned) == 1  # the autouse fixture checks its child is gone too


def test_stderr_flood_does_not_block(sim, run_stream):
    turn = run_stream(sim("stderr-flood", stderr_tail_bytes=4096), "What is 2 + 2?")
    r = turn.result
    assert r.success and r.result == "4"
    assert 0 < len(r.stderr.encode()) <= 4096
    assert "\x1b" not in r.stderr


def test_silence_until_idle_timeout(sim, run_stream):
    # generous: the simulator's start-up on a loaded machine must not count as the silence
    turn = run_stream(sim("silence", idle_timeout=3.0), "What is 2 + 2?")
    r = turn.result
    assert not r.success and isinstance(r.exception, AgentTimeoutError)
    assert "idle_timeout=3 s" in r.error
    assert turn.types()[0] == "system:init"
    assert turn.events[-2].type is EventType.ERROR
    assert turn.events[-2].data["code"] == "idle_timeout"
    assert_client_result(turn.events, r)


def test_whole_turn_timeout(sim, run_query):
    config = sim("slow", timeout=1.0).with_overrides(
        env={**sim("slow").env, "CURSOR_AGENT_SIM_DELAY": "0.5"})
    r = run_query(config, "What is 2 + 2?")
    assert not r.success and isinstance(r.exception, AgentTimeoutError)
    assert "timeout=1 s" in r.error and r.exit_code == 143


def test_utf8_split_across_writes(sim, run_stream):
    turn = run_stream(sim("split-writes"), "What is 2 + 2?")
    r = turn.result
    assert r.success
    assert "naïve café — 日本語 ✓ 🚀" in r.result
    assert not any(e.type is EventType.RAW for e in turn.events)
    assert all("\ufffd" not in (e.text or "") for e in turn.events)


def test_banner_lines_become_raw_events(sim, run_stream):
    turn = run_stream(sim("banner"), "What is 2 + 2?")
    assert turn.result.success and turn.result.result == "4"
    raws = [e for e in turn.events if e.type is EventType.RAW]
    assert raws and all("\x1b" not in (e.text or "") for e in raws)


def test_20_mb_line_arrives_whole(sim, run_stream):
    turn = run_stream(sim("huge-line"), "What is 2 + 2?")
    r = turn.result
    assert r.success
    big = [e for e in turn.events if e.line is not None and len(e.line) > 19_000_000]
    assert len(big) == 1 and big[0].type is EventType.TOOL_CALL_COMPLETED
    call = next(tc for tc in r.tool_calls if tc.call_id == big[0].call_id)
    assert len(str(call.result)) > 19_000_000


def test_line_over_max_line_bytes_fails_the_turn_but_stream_goes_on(sim, run_stream):
    turn = run_stream(sim("huge-line", max_line_bytes=1_000_000), "What is 2 + 2?")
    r = turn.result
    assert not r.success and isinstance(r.exception, ProtocolError)
    assert "max_line_bytes=1000000" in r.error
    errors = [e for e in turn.events if e.type is EventType.ERROR]
    assert len(errors) == 1 and errors[0].data["code"] == "line_too_long"
    # decided and documented: the stream continues after the oversize line
    assert turn.types()[-1] == "result:success"
    assert r.result.endswith("4")


def test_one_megabyte_prompt_on_stdin(sim, run_stream):
    chunk = "line ü→✓ 🚀 --resume x --api-key y -p \"quoted\" 'single' $HOME `ls`\n"
    prompt = (chunk * (1_000_000 // len(chunk.encode()) + 1)).strip()
    assert len(prompt.encode()) > 1_000_000
    turn = run_stream(sim(), prompt)
    user = [e for e in turn.events if e.type is EventType.USER]
    assert len(user) == 1 and user[0].text == prompt
    assert turn.result.success


@pytest.mark.parametrize(
    ("fault", "error", "words"),
    [
        ("auth", AuthenticationError, "Authentication required"),
        ("trust", WorkspaceTrustError, "Workspace Trust Required"),
        ("invalid-model", InvalidModelError, "Cannot use this model"),
        ("usage-limit", UsageLimitError, "usage limit"),
        ("bad-resume", SessionError, "Failed to claim persistent session"),
        ("chat-busy", SessionError, "may still be running"),
    ],
)
def test_typed_errors(sim, run_stream, fault, error, words):
    turn = run_stream(sim(fault), "What is 2 + 2?")
    r = turn.result
    assert not r.success and type(r.exception) is error
    assert r.exit_code == 1 and words in r.error and words in r.stderr
    assert turn.events[-2].type is EventType.ERROR
    assert turn.events[-2].data["error_type"] == error.__name__
    assert_client_result(turn.events, r)
    with pytest.raises(error):
        r.raise_for_error()


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
    config = sim("silence", env={**sim().env, "CAA_EXTRA": "from-config"})
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
    r = run_query(sim(force_approve=True, timeout=2.0, kill_grace=0.5), "run `sleep 300`")
    assert not r.success and isinstance(r.exception, AgentTimeoutError)
    assert r.exit_code in (143, 137)
    assert any(tc.kind.value == "shell" for tc in r.tool_calls)  # started, never completed
