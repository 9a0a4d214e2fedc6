"""The footer of a failed turn shows the agent's error and stderr inert: an escape sequence in
them is data (``\\x1b…``), never written to the reader's terminal."""

from __future__ import annotations

import json
import subprocess
import sys
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


def test_a_session_id_that_is_not_a_chat_id_is_shown_inert_and_never_in_a_command(
    cli: Run, tmp_path: Path
) -> None:
    """The chat id is the agent's word: one that is not a UUID is shown with its escapes
    visible, and no "continue" command is built from it (``x; touch …`` would be a shell
    command the reader copies)."""
    for sid in ("x; touch PWNED #", "s1\u001b[2J\u001b]0;PWNED\u0007"):
        agent = tmp_path / "agent.py"  # the simulator gives its own ids: a fake agent
        lines = [json.dumps(o) for o in [
            {"type": "system", "subtype": "init", "session_id": sid, "cwd": "/x", "model": "Auto"},
            {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 5,
             "result": "ok", "session_id": sid},
        ]]
        body = f"import sys\nsys.stdin.read()\nprint({chr(10).join(lines)!r})\n"
        agent.write_text(f"#!{sys.executable}\n{body}")
        agent.chmod(0o755)
        proc = cli("run", "--agent-binary", str(agent), "--trust", "hi")
        assert proc.returncode == 0, proc.stderr
        assert "\x1b" not in proc.stdout + proc.stderr, repr(proc.stdout[-300:])
        assert "PWNED" in proc.stdout  # shown, inert
        assert "--resume" not in proc.stdout, proc.stdout[-300:]


def test_the_continue_command_quotes_what_it_is_given() -> None:
    from cursor_agent_api.cli.options import continue_command

    assert continue_command("a b;c", False, None) == "cursor-agent-api chat --resume 'a b;c'"
