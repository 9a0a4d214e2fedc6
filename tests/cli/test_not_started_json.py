"""``-o json`` and ``-o ndjson`` when the agent cannot start (not installed, not executable):
the same one JSON object (ndjson: its closing ``result:error`` event) as every other failure,
never an empty stdout for ``jq`` to choke on; exit status 1."""

from __future__ import annotations

import json
from collections.abc import Callable
from subprocess import CompletedProcess

import pytest


@pytest.mark.parametrize("binary", ["/nonexistent/agent", "/etc/passwd"])
def test_json_says_the_agent_could_not_start(
        cli: Callable[..., CompletedProcess[str]], binary: str) -> None:
    proc = cli("run", "--agent-binary", binary, "--trust", "-o", "json", "hi", stdin="")
    assert proc.returncode == 1, proc.stderr
    [line] = proc.stdout.splitlines()
    result = json.loads(line)
    assert result["success"] is False and result["error_type"] == "AgentNotFoundError"
    assert binary in result["error"]


def test_ndjson_ends_with_the_closing_result_event(
        cli: Callable[..., CompletedProcess[str]]) -> None:
    proc = cli("run", "--agent-binary", "/nonexistent/agent", "--trust", "-o", "ndjson", "hi",
               stdin="")
    assert proc.returncode == 1, proc.stderr
    last = json.loads(proc.stdout.splitlines()[-1])
    assert last["type"] == "result:error"
    assert last["data"]["error_type"] == "AgentNotFoundError"
    assert "/nonexistent/agent" in last["data"]["error"]
