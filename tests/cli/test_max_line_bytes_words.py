"""A line over the size limit is said in the command line's words: its flag,
``--max-line-bytes``, not the library's parameter ``max_line_bytes`` — in the error line each
dropped line gets and in the footer alike (the footer's remedy named the flag, its message and
the error lines the parameter). The data outputs (``--output ndjson``/``json``) are the
library's events and result, their shape the same, and what the library wrote in them (its
error events, the result's ``error``) in the command line's words too, as the other views
(they kept the library's until the ``-o json`` error review: test_json_error_words.py)."""

from __future__ import annotations

import json
import stat
import subprocess
from collections.abc import Callable
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from cursor_agent_api.cli.views import LiveView, TextView, TurnView
from cursor_agent_api.protocol import EventReader

Run = Callable[..., subprocess.CompletedProcess[str]]


def test_run_names_the_flag(cli: Run) -> None:
    proc = cli("run", "--simulate", "--trust", "--max-line-bytes", "300", "--output", "text",
               "read notes.txt")
    assert proc.returncode == 1, proc.stderr
    said = proc.stdout + proc.stderr
    assert "max_line_bytes" not in said, said
    assert "exceeded --max-line-bytes=300; it was dropped (raise --max-line-bytes" in said
    assert "line(s) of the agent's output exceeded --max-line-bytes=300 and were dropped" in said


def test_the_data_outputs_name_the_flag_too(cli: Run) -> None:
    proc = cli("run", "--simulate", "--trust", "--max-line-bytes", "300", "--output", "ndjson",
               "read notes.txt")
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    errors = [e for e in events if e["type"] == "error"]
    assert errors and all("exceeded --max-line-bytes=300" in e["text"] == e["data"]["message"]
                          for e in errors), errors
    assert "exceeded --max-line-bytes=300" in events[-1]["text"]  # the result:error
    assert "max_line_bytes" not in proc.stdout


@pytest.mark.parametrize("kind", ["live", "text"])
def test_the_views_name_the_flag(kind: str) -> None:
    out = StringIO()
    console = Console(file=out, width=200, color_system=None)
    view: TurnView = LiveView(console) if kind == "live" else TextView(console)
    (event,) = EventReader(max_line_bytes=10).feed(b'{"type":"assistant","text":"long"}\n')
    try:
        view.handle(event, ())
    finally:
        if isinstance(view, LiveView):
            view.stop()
    assert "error: a line of 34 bytes exceeded --max-line-bytes=10; it was dropped (raise " \
           "--max-line-bytes to keep such lines)" in out.getvalue()
    assert "max_line_bytes" not in out.getvalue()


def test_the_dropin_json_says_the_failure_its_exit_status_says(cli: Run,
                                                               tmp_path: Path) -> None:
    """``--output-format json`` printed the agent's ``"is_error":false`` object and exited 1
    after a dropped line: a script reading ``is_error`` and one reading ``$?`` disagreed. The
    object now says the failure, in the flag's words; the agent's other fields stay."""
    agent = tmp_path / "agent"
    agent.write_text(
        "#!/bin/sh\ncat >/dev/null\n"
        f"echo '{{\"type\":\"assistant\",\"text\":\"{'x' * 400}\"}}'\n"
        "echo '{\"type\":\"result\",\"subtype\":\"success\",\"duration_ms\":5,"
        "\"duration_api_ms\":5,\"is_error\":false,\"result\":\"ok\",\"session_id\":\"s1\","
        "\"request_id\":\"r1\"}'\n")
    agent.chmod(agent.stat().st_mode | stat.S_IXUSR)
    proc = cli("run", "--agent-binary", str(agent), "--trust", "--max-line-bytes", "300",
               "--output-format", "json", "hi", stdin="")
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stdout.splitlines()
    result = json.loads(line)
    assert result["is_error"] is True and result["subtype"] == "error", result
    assert "exceeded --max-line-bytes=300 and were dropped" in result["error"]
    assert (result["result"], result["session_id"], result["request_id"]) == ("ok", "s1", "r1")
