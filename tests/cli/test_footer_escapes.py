"""The footer of a failed turn shows the agent's error and stderr inert: an escape sequence in
them is data (``\\x1b…``), never written to the reader's terminal."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from cursor_agent_api.cli.views import footer_lines
from cursor_agent_api.errors import CursorAgentError
from cursor_agent_api.protocol import AgentResult

Run = Callable[..., subprocess.CompletedProcess[str]]
EVIL = "bad \u001b]0;PWNED\u0007\u001b[2J end"


def test_footer_lines_show_the_error_and_stderr_inert() -> None:
    for result in (AgentResult(False, "", "c1", error=EVIL, stderr=EVIL),
                   AgentResult(False, "", "c1", error=EVIL, exception=CursorAgentError(EVIL))):
        text = "\n".join(line.plain for line in footer_lines(result, ""))
        assert "\x1b" not in text and "\x07" not in text, repr(text)
        assert "bad \\x1b]0;PWNED\\x07\\x1b[2J end" in text


def test_a_failed_run_writes_no_escape_of_the_agents(cli: Run, tmp_path: Path) -> None:
    sid = "11111111-2222-4333-8444-555555555555"
    script = tmp_path / "err.ndjson"
    script.write_text("\n".join(json.dumps(o) for o in [
        {"type": "system", "subtype": "init", "session_id": sid, "cwd": "/x", "model": "Auto"},
        {"type": "result", "subtype": "error", "is_error": True, "duration_ms": 5,
         "result": EVIL, "session_id": sid},
    ]) + "\n")
    for args in ((), ("--output-format", "text")):  # the footer; the drop-in's stderr line
        proc = cli("run", "--simulate", "--trust", *args, "hi",
                   extra_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)})
        assert proc.returncode == 1
        assert "\x1b" not in proc.stdout + proc.stderr, repr(proc.stdout[-200:])
        assert "PWNED" in proc.stdout + proc.stderr  # shown, inert
