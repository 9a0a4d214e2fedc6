"""``cursor-agent-api run`` against the simulator: output modes, recording, exit codes."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

Run = Callable[..., subprocess.CompletedProcess[str]]


def test_plain_text_when_not_a_terminal(cli: Run) -> None:
    proc = cli("run", "--simulate", "--trust", "list the files")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "\x1b[" not in out
    assert "SIMULATED" in out
    assert "✓ ls " in out and "succeeded" in out
    assert "notes.txt" in out
    assert "✓ done · tokens in" in out
    assert "continue: cursor-agent-api chat --resume " in out and "--simulate" in out


def test_json_output_is_one_agent_result(cli: Run) -> None:
    proc = cli("run", "--simulate", "--trust", "--output", "json", "read notes.txt")
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.splitlines()
    result = orjson.loads(line)
    assert result["success"] is True and result["error"] is None
    assert result["result"] == result["text"]
    assert [c["kind"] for c in result["tool_calls"]] == ["read"]
    assert result["tool_calls"][0]["output"] == "alpha\nbeta\n"
    assert result["usage"]["input_tokens"] > 0
    assert "SIMULATED" in proc.stderr  # said, but not on the machine-readable stdout


def test_ndjson_streams_normalized_events(cli: Run) -> None:
    proc = cli("run", "--simulate", "--trust", "--output", "ndjson", "list the files")
    assert proc.returncode == 0, proc.stderr
    events = [orjson.loads(line) for line in proc.stdout.splitlines()]
    assert events[0]["type"] == "system:init"
    assert events[-1]["type"] == "result:success"
    assert {"tool-call-started", "tool-call-completed", "assistant:delta"} <= {
        e["type"] for e in events}
    assert all(set(e) == {"type", "raw_type", "subtype", "data", "text", "session_id",
                          "timestamp_ms"} for e in events)


def test_prompt_from_stdin_and_file(cli: Run, tmp_path: Path) -> None:
    proc = cli("run", "--simulate", "--trust", "--output", "json", stdin="What is 6 * 7?\n")
    assert orjson.loads(proc.stdout)["result"].strip().endswith("42")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("--force is not a flag here; what is 2 + 2?")
    proc = cli("run", "--simulate", "--trust", "--output", "json", "--prompt-file", str(prompt))
    assert proc.returncode == 0, proc.stderr
    assert orjson.loads(proc.stdout)["result"].strip().endswith("4")


def test_record_then_replay(cli: Run, tmp_path: Path) -> None:
    rec = tmp_path / "run.ndjson"
    proc = cli("run", "--simulate", "--trust", "--record", str(rec), "read notes.txt")
    assert proc.returncode == 0, proc.stderr
    summary = orjson.loads(cli("replay", str(rec), "--summary").stdout)
    assert summary["success"] and summary["text"] == summary["result_text"]
    assert summary["raw_lines"] == 0
    assert [c["kind"] for c in summary["tool_calls"]] == ["read"]


@pytest.mark.parametrize(
    ("args", "env", "words"),
    [
        (["--trust"], {"CURSOR_AGENT_SIM_FAULT": "auth"}, ["cursor-agent-sim login", "CURSOR_API_KEY"]),
        ([], {}, ["--trust"]),  # a fresh workspace is not trusted
        (["--trust", "--model", "gpt-9"], {"CURSOR_AGENT_SIM_FAULT": "invalid-model"},
         ["Cannot use this model", "`agent models` and pass it with --model"]),
        (["--trust", "--resume", "0f6b1c1e-7c2a-4d7e-9a55-3f1f4a3c9b10"],
         {"CURSOR_AGENT_SIM_FAULT": "bad-resume"}, ["cannot be resumed", "sessions list"]),
        (["--trust"], {"CURSOR_AGENT_SIM_FAULT": "usage-limit"}, ["usage limit"]),
        (["--trust"], {"CURSOR_AGENT_SIM_FAULT": "crash"}, ["exit"]),
    ],
    ids=["auth", "trust", "model", "resume", "usage-limit", "crash"],
)
def test_failures_exit_1_with_message_and_remedy(cli: Run, args: list[str], env: dict[str, str],
                                                 words: list[str]) -> None:
    proc = cli("run", "--simulate", *args, "list the files", extra_env=env)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text
    assert text.count("✗") == 1 and "error:" not in text  # said once
    (line,) = [ln for ln in text.splitlines() if "✗" in ln]
    for word in words:
        assert word in line  # whole, on one line: no wrapping at 80 columns on a pipe
    for python in ("=True", "AgentConfig", "list_models()", "(CLI:"):
        assert python not in text  # the remedy in the command line's words


def test_malformed_resume_id_is_refused_before_the_agent_runs(cli: Run) -> None:
    # a chat id is a UUID: anything else is refused as a usage error, never passed to argv
    proc = cli("run", "--simulate", "--trust", "--resume", "not-a-uuid", "list the files")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "not a chat id (a UUID)" in proc.stderr



@pytest.mark.parametrize("command", ["run", "chat"])
def test_an_empty_resume_id_is_refused_in_the_command_lines_words(cli: Run, command: str) -> None:
    # (`--resume "$CHAT"` with CHAT unset): it said "AgentConfig.resume must not be empty (use
    # None to leave it unset)", the library's words
    proc = cli(command, "--simulate", "--trust", "--resume", "", *(["hi"] if command == "run" else []),
               stdin="hi\n")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "--resume needs a chat id" in proc.stderr and "AgentConfig" not in proc.stderr
    assert "None" not in proc.stderr and "Traceback" not in proc.stderr

def test_missing_agent_says_how_to_install(cli: Run) -> None:
    proc = cli("run", "--agent-binary", "/nonexistent/agent", "hi")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    (line,) = proc.stderr.splitlines()  # one line, not hard-wrapped at 80 columns
    assert "install" in line and "--simulate" in line and "--agent-binary" in line
    assert "AgentConfig" not in line


@pytest.mark.parametrize(
    "args",
    [["run"], ["run", "--simulate", "--timeout", "-1", "x"], ["run", "--bogus", "x"],
     ["run", "--workspace", "/no/such/dir", "x"], ["run", "--prompt-file", "/no/file"]],
    ids=["no-prompt", "bad-timeout", "unknown-flag", "bad-workspace", "bad-prompt-file"],
)
def test_usage_errors_exit_2(cli: Run, args: list[str]) -> None:
    proc = cli(*args, stdin="")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr


def test_resume_and_sessions(cli: Run) -> None:
    first = orjson.loads(cli("run", "--simulate", "--trust", "--output", "json",
                             "remember the codeword: heron").stdout)
    chat_id = first["session_id"]
    again = cli("run", "--simulate", "--resume", chat_id, "--output", "json",
                "what did I ask you to remember?")
    assert again.returncode == 0, again.stderr
    second = orjson.loads(again.stdout)
    assert second["session_id"] == chat_id and "heron" in second["result"]

    listed = [orjson.loads(line) for line in cli("sessions", "list", "--json").stdout.splitlines()]
    (entry,) = listed
    assert entry["chat_id"] == chat_id and entry["turns"] == 2
    assert entry["first_prompt"] == "remember the codeword: heron"

    shown = cli("sessions", "show", chat_id)
    assert shown.returncode == 0 and "› what did I ask you to remember?" in shown.stdout
    assert "heron" in cli("sessions", "list").stdout

    assert cli("sessions", "rm", chat_id).returncode == 0
    assert cli("sessions", "list", "--json").stdout == ""
    gone = cli("sessions", "rm", chat_id)
    assert gone.returncode == 2 and "no saved chat" in gone.stderr


def test_saved_chat_loads_with_the_client(cli: Run, cli_env: dict[str, str]) -> None:
    from cursor_agent_api import ConversationSession

    result = orjson.loads(cli("run", "--simulate", "--trust", "--output", "json", "say hi").stdout)
    path = Path(cli_env["CURSOR_AGENT_API_HOME"]) / "chats" / f"{result['session_id']}.json"
    session = ConversationSession.load(path)
    try:
        assert session.session_id == result["session_id"]
        assert [t.prompt for t in session.history] == ["say hi"]
    finally:
        session.close()
