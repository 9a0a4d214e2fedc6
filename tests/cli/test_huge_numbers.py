"""``-o json`` and ``-o ndjson`` print what an agent wrote with numbers past 64 bits
(``1e20`` tokens, a ``1e20`` timestamp) and exit 0: no traceback from ``orjson.dumps``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

Cli = Callable[..., subprocess.CompletedProcess[str]]

LINES = [
    '{"type":"system","subtype":"init","session_id":"s1","model":"m","cwd":"/tmp"}',
    '{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"hi"}]},'
    '"session_id":"s1","timestamp_ms":1e20}',
    '{"type":"tool_call","subtype":"completed","call_id":"c1","session_id":"s1","tool_call":'
    '{"shellToolCall":{"args":{"command":"ls"},"result":{"success":{"exitCode":1e20,'
    '"stdout":""}}},"startedAtMs":"99999999999999999999"}}',
    '{"type":"result","subtype":"success","result":"hi","session_id":"s1","duration_ms":true,'
    '"usage":{"inputTokens":1e20,"outputTokens":5}}',
]


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    path = tmp_path / "agent_bignumbers.py"
    body = "import sys\nsys.stdin.read()\n" + "".join(f"print({line!r})\n" for line in LINES)
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(0o755)
    return path


def test_json_output_with_huge_numbers(cli: Cli, agent: Path) -> None:
    proc = cli("run", "--agent-binary", str(agent), "--trust", "-o", "json", "hello")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["success"] is True and out["result"] == "hi"
    assert out["usage"]["input_tokens"] == 0 and out["usage"]["output_tokens"] == 5
    assert out["duration_ms"] is None
    assert out["tool_calls"][0]["exit_code"] is None
    assert "Traceback" not in proc.stderr


def test_ndjson_output_with_huge_numbers(cli: Cli, agent: Path) -> None:
    proc = cli("run", "--agent-binary", str(agent), "--trust", "-o", "ndjson", "hello")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [e["type"] for e in events] == ["system:init", "assistant:delta",
                                           "tool-call-completed", "result:success"]
    assert events[1]["timestamp_ms"] is None
    assert events[1]["data"]["timestamp_ms"] == 1e20  # the event's data as it came
    assert "Traceback" not in proc.stderr
