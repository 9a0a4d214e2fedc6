"""Issue 11.5 on the client side: nothing of the agent's (or a request's) becomes an option,
and no secret appears in an error message."""

from __future__ import annotations

import pytest

from cursor_agent_api import AgentConfig, ConversationSession, EventType
from cursor_agent_api.config import is_chat_id
from cursor_agent_api.runtime.argv import build_argv

CHAT = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
KEY = "sk-very-secret-key-0123456789"


@pytest.mark.parametrize("fields", [
    {"api_key": KEY + "\n"},
    {"api_key": KEY + "\x00"},
    {"api_key": " "},
    {"env": {"TOKEN": KEY + "\x00"}},
    {"env": {"TOKEN": 12345}},
    {"headers": [f"Authorization Bearer {KEY}"]},
    {"headers": [f"Authorization: Bearer {KEY}\n"]},
    {"extra_args": [f"--api-key={KEY}\x00"]},
])
def test_no_secret_in_config_errors(fields):
    with pytest.raises((ValueError, TypeError)) as info:
        AgentConfig(**fields)
    message = str(info.value)
    assert KEY not in message and "12345" not in message
    assert "AgentConfig." in message  # still says which field


@pytest.mark.parametrize("fields", [
    {"resume": "--force"}, {"resume": "c1"}, {"resume": f"{CHAT} --force"},
    {"model": "-f"}, {"model": "--force"}, {"model": "gpt 5"}, {"model": "a\tb"},
    {"headers": ["--force: x"]},
])
def test_option_like_values_are_refused(fields):
    with pytest.raises(ValueError):
        AgentConfig(**fields)


def test_values_are_joined_to_their_options():
    argv = build_argv(AgentConfig(resume=CHAT, model="gpt-5", workspace="-odd dir",
                                  headers=["X-A: -1"]), binary="agent")
    assert argv[4:] == ["--model=gpt-5", "--workspace=-odd dir", f"--resume={CHAT}",
                        "--header=X-A: -1"]


def test_is_chat_id():
    assert is_chat_id(CHAT) and is_chat_id(CHAT.upper())
    assert not is_chat_id(CHAT + "\n") and not is_chat_id("--resume") and not is_chat_id(None)


def _hostile_agent(tmp_path):
    """A stand-in agent that reports the session id "--force" (a hostile or broken agent)."""
    sid = '"--force"'
    lines = [
        f'{{"type":"system","subtype":"init","session_id":{sid},"model":"Auto"}}',
        '{"type":"assistant","message":{"role":"assistant","content":[{"type":"text",'
        f'"text":"ok"}}]}},"session_id":{sid}}}',
        '{"type":"result","subtype":"success","is_error":false,"duration_ms":1,'
        f'"result":"ok","session_id":{sid}}}',
    ]
    path = tmp_path / "agent.sh"
    body = "\n".join(f"echo '{line}'" for line in lines)
    path.write_text(f"#!/bin/sh\ncat >/dev/null\n{body}\n")
    path.chmod(0o755)
    return path


def test_agent_reported_session_id_never_becomes_an_option(tmp_path, argvs):
    with ConversationSession(AgentConfig(agent_binary=str(_hostile_agent(tmp_path)))) as session:
        r1 = session.send("hello")
        assert r1.success and r1.session_id == "--force"  # the data, as the agent wrote it
        assert session.session_id is None  # ...but not adopted as the chat id
        session.send("hello again")
    assert len(argvs) == 2
    for argv in argvs:
        assert "--force" not in argv
        assert not any(a.startswith("--resume") for a in argv)


# ---- issue 12.4: text mode returns stdout exactly; every stream ends with one result ----

PARAGRAPHS = "First paragraph.\n\nSecond paragraph.\n\n\nThird."


def _result_script(tmp_path, result: str):
    sid = CHAT
    path = tmp_path / "paragraphs.ndjson"
    path.write_text(
        f'{{"type":"system","subtype":"init","session_id":"{sid}","cwd":"/w"}}\n'
        + '{"type":"result","subtype":"success","is_error":false,"result":'
        + __import__("json").dumps(result) + f',"session_id":"{sid}"}}\n')
    return path


def test_text_mode_keeps_blank_lines(sim, run_stream, tmp_path):
    turn = run_stream(sim(output_format="text", script=_result_script(tmp_path, PARAGRAPHS)),
                      "hi")
    r = turn.result
    assert r.success and r.result == PARAGRAPHS + "\n" and r.text == PARAGRAPHS + "\n"
    last = turn.events[-1]
    assert last.type is EventType.RESULT_SUCCESS and last.data["added_by_client"] is True
    assert last.data["result"] == PARAGRAPHS + "\n"
    assert sum(e.is_result for e in turn.events) == 1


# ---- issue 12.7: the agent's own reason, from the last stderr lines ------------------------

STDERR_USAGE = (
    "[warn] Failed to load extension foo\n"
    "Error: stream closed\n"
    "    at Object.<anonymous> (/app/index.js:1:1)\n"
    "ActionRequiredError: You've hit your usage limit. Upgrade to Pro for more.\n"
)


def _stand_in(tmp_path, stderr: str, code: int, stdout: str = ""):
    import shlex

    script = tmp_path / "agent.sh"
    script.write_text(f"#!/bin/sh\ncat >/dev/null\nprintf %s {shlex.quote(stdout)}\n"
                      f"printf %s {shlex.quote(stderr)} >&2\nexit {code}\n")
    script.chmod(0o755)
    return AgentConfig(agent_binary=str(script))


def test_usage_limit_reason_is_the_last_error_line(tmp_path, run_query):
    from cursor_agent_api import UsageLimitError

    r = run_query(_stand_in(tmp_path, STDERR_USAGE, 1), "hi")
    assert isinstance(r.exception, UsageLimitError)
    assert "ActionRequiredError: You've hit your usage limit" in r.error
    assert "Failed to load extension" not in r.error
    assert r.events[-1].data["error"] == r.error


def test_unknown_option_reason(tmp_path, run_query):
    stderr = "Starting...\nRetriableError: [unknown] error: unknown option '--bogus'\n"
    r = run_query(_stand_in(tmp_path, stderr, 1), "hi")
    assert "RetriableError: [unknown] error: unknown option '--bogus'" in r.error


def test_exit_zero_without_result_says_why(tmp_path, run_query):
    init = '{"type":"system","subtype":"init","session_id":"' + CHAT + '"}\n'
    r = run_query(_stand_in(tmp_path, "ActionRequiredError: You've hit your usage limit\n", 0,
                            stdout=init), "hi")
    assert not r.success and "without a result" in r.error
    assert "ActionRequiredError: You've hit your usage limit" in r.error


def test_replay_summary_error_is_the_agents_reason(tmp_path):
    import json
    import subprocess
    import sys

    recording = tmp_path / "rec.ndjson"  # captured with 2>&1: stderr lines are raw lines
    recording.write_text(
        '{"type":"system","subtype":"init","session_id":"' + CHAT + '"}\n'
        + "\x1b[2mWelcome to Cursor Agent\x1b[0m\n"
        + '{"type":"assistant","message":{"role":"assistant","content":[{"type":"text",'
          '"text":"Looking"}]}}\n'
        + STDERR_USAGE)
    proc = subprocess.run([sys.executable, "-m", "cursor_agent_api.cli", "replay", str(recording),
                           "--summary"], capture_output=True, text=True, timeout=60, check=False)
    summary = json.loads(proc.stdout)
    assert summary["success"] is False
    assert summary["error"] == ("ActionRequiredError: You've hit your usage limit. "
                                "Upgrade to Pro for more.")
    banner_only = tmp_path / "banner.ndjson"
    banner_only.write_text('{"type":"system","subtype":"init"}\nWelcome to Cursor Agent\n')
    proc = subprocess.run([sys.executable, "-m", "cursor_agent_api.cli", "replay",
                           str(banner_only), "--summary"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert json.loads(proc.stdout)["error"] == "the stream ended without a result"
