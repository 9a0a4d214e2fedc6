"""``run --acp`` / ``chat --acp`` with ``--output-format`` and ``--record``.

The agent's ACP traffic is JSON-RPC, not stream-json: the events mapped from it carry no
line of the agent's. ``--output-format json`` must still print the result object,
``stream-json`` the events, and ``--record`` a file that ``replay`` reads — never exit 0 with
nothing written.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import orjson

from cursor_agent_api.errors import AgentProcessError
from cursor_agent_api.protocol import error_event
from cursor_agent_api.runtime.outcome import client_result_event

Run = Callable[..., subprocess.CompletedProcess[str]]

ANSWER = "The workspace contains"


def test_output_format_json_prints_the_result_object(cli: Run) -> None:
    proc = cli("run", "--simulate", "--trust", "--acp", "--output-format", "json",
               "list the files")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout
    obj = orjson.loads(lines[0])
    assert list(obj)[:7] == ["type", "subtype", "duration_ms", "duration_api_ms", "is_error",
                             "result", "session_id"]
    assert obj["type"] == "result" and obj["subtype"] == "success" and not obj["is_error"]
    assert ANSWER in obj["result"] and obj["session_id"]


def test_output_format_stream_json_prints_each_event(cli: Run) -> None:
    proc = cli("run", "--simulate", "--trust", "--acp", "--output-format", "stream-json",
               "list the files")
    assert proc.returncode == 0, proc.stderr
    objs = [orjson.loads(line) for line in proc.stdout.splitlines()]
    assert objs[0]["type"] == "system" and objs[0]["subtype"] == "init"
    assert objs[-1]["type"] == "result" and ANSWER in objs[-1]["result"]
    assert {o["type"] for o in objs} >= {"user", "assistant", "tool_call", "result"}
    assert all(o["transport"] == "acp" for o in objs)


def test_a_failed_acp_turn_prints_no_result_and_says_why(cli: Run) -> None:
    proc = cli("run", "--simulate", "--trust", "--acp", "--output-format", "json", "hi",
               extra_env={"CURSOR_AGENT_SIM_FAULT": "auth"})
    assert proc.returncode == 1
    assert proc.stdout == ""  # the agent wrote no result: as `agent -p`, nothing
    assert "login" in proc.stderr


def _replayed(cli: Run, path: Path) -> dict[str, object]:
    summary = cli("replay", "--summary", str(path))
    assert summary.returncode == 0, summary.stderr
    result: dict[str, object] = orjson.loads(summary.stdout)
    return result


def test_run_record_with_acp_is_replayable(cli: Run, cli_env: dict[str, str]) -> None:
    rec = Path(cli_env["TEST_WS"]).parent / "acp.ndjson"
    proc = cli("run", "--simulate", "--trust", "--acp", "--record", str(rec), "--output",
               "text", "list the files")
    assert proc.returncode == 0, proc.stderr
    summary = _replayed(cli, rec)
    assert summary["success"] is True
    assert ANSWER in str(summary["result_text"])
    assert [c["kind"] for c in summary["tool_calls"]] == ["read"]  # type: ignore[attr-defined]
    shown = cli("replay", str(rec))
    assert shown.returncode == 0 and ANSWER in shown.stdout


def test_chat_record_with_acp_is_replayable(cli: Run, cli_env: dict[str, str]) -> None:
    rec = Path(cli_env["TEST_WS"]).parent / "chat.ndjson"
    proc = cli("chat", "--simulate", "--trust", "--acp", "--record", str(rec),
               stdin="list the files\n")
    assert proc.returncode == 0, proc.stderr
    summary = _replayed(cli, rec)
    assert summary["success"] is True and ANSWER in str(summary["result_text"])


def test_events_this_library_made_have_no_agent_line() -> None:
    from cursor_agent_api.cli.views import agent_line

    failure = client_result_event(AgentProcessError("exit 1", exit_code=1))
    failure.data["transport"] = "acp"
    turn_error = error_event("exit 1", code="exit", error_type="AgentProcessError")
    turn_error.data["transport"] = "acp"
    assert agent_line(failure) is None
    assert agent_line(turn_error) is None
