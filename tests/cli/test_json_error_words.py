"""``-o json``'s ``error`` and ``-o ndjson``'s errors (the result the client adds when the agent
wrote none, the runtime's ``ERROR`` events, a line over ``--max-line-bytes``) are in the
command line's words, as the text view and stderr say them: ``--trust``, not
``trust=True (CLI: --trust)``; ``--agent-binary``, not ``AgentConfig(agent_binary=...)``.
The JSON's shape is the same."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

import pytest

from cursor_agent_api.protocol import AgentResult

Cli = Callable[..., subprocess.CompletedProcess[str]]

LIBRARY_WORDS = ("AgentConfig", "=True", "force_approve", "max_line_bytes", "list_models",
                 "(CLI:", "`agent login`")

FAILURES = {  # the run: what its error says instead
    "not-trusted": (["--simulate"], {}, "pass --trust, or --force"),
    "not-found": (["--agent-binary", "/nonexistent/agent", "--trust"], {},
                  "pass its path with --agent-binary"),
    "auth": (["--simulate", "--trust"], {"CURSOR_AGENT_SIM_FAULT": "auth"},
             "run `cursor-agent-sim login` or set CURSOR_API_KEY"),
    "model": (["--simulate", "--trust"], {"CURSOR_AGENT_SIM_FAULT": "invalid-model"},
              "pass it with --model"),
    "line-too-long": (["--simulate", "--trust", "--max-line-bytes", "100"], {},
                      "raise --max-line-bytes"),
}


def _run(cli: Cli, failure: str, output: str) -> subprocess.CompletedProcess[str]:
    args, env, _ = FAILURES[failure]
    proc = cli("run", *args, "-o", output, "list the files", stdin="", extra_env=env)
    assert proc.returncode == 1, proc.stderr[-600:]
    return proc


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_json_error_is_in_the_command_lines_words(cli: Cli, failure: str) -> None:
    proc = _run(cli, failure, "json")
    (line,) = proc.stdout.splitlines()
    result = json.loads(line)
    assert list(result) == list(AgentResult(success=False, result="", session_id=None).to_dict())
    assert result["success"] is False and result["error_type"]
    error = result["error"]
    assert FAILURES[failure][2] in error, error
    assert [w for w in LIBRARY_WORDS if w in error] == [], error


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_ndjson_errors_are_in_the_command_lines_words(cli: Cli, failure: str) -> None:
    proc = _run(cli, failure, "ndjson")
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    ours = [e for e in events if e["type"] in ("error", "result:error")]
    assert ours and ours[-1] is events[-1] and events[-1]["type"] == "result:error", events[-3:]
    for event in ours:
        assert list(event) == ["type", "raw_type", "subtype", "data", "text", "session_id",
                               "timestamp_ms"], event
        said = [event["text"], event["data"].get("message"), event["data"].get("error")]
        assert [w for w in LIBRARY_WORDS for s in said if s and w in s] == [], said
    assert FAILURES[failure][2] in events[-1]["data"]["error"], events[-1]
    assert events[-1]["text"] == events[-1]["data"]["error"]
