"""What the agent wrote reaches a terminal as data in every output form.

The escapes of the agent's text (a screen clear, OSC 52 writing the clipboard, a window title,
a bell) and the C1 controls (``U+009B``, the one-character CSI, which terminals such as xterm
obey when it comes UTF-8 encoded) and bidi controls must never reach the terminal as they are:
not through the drop-in ``--output-format text|json|stream-json`` at a terminal, and not
through ``-o json``/``-o ndjson`` anywhere (JSON escapes them as ``\\u009b``: the same value).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from pty_session import run_on_pty

from cursor_agent_api.sim import wire

Run = Callable[..., subprocess.CompletedProcess[str]]
CLI = [sys.executable, "-m", "cursor_agent_api.cli"]  # (not conftest's: which one a bare
# import finds depends on the run)

SID = "31b5904c-4bd1-4899-b607-0786f7fd948e"
EVIL = ("clear\x1b[2J clip\x1b]52;c;cm0gLXJmIH4=\x07 title\x1b]0;PWNED\x07 bell\x07 "
        "c1csi\u009b31m c1osc\u009d0;T\u009c del\x7f bidi\u202etxt.sh 日本語 🚀")
EXECUTABLE = ("\x1b[2J", "\x1b]", "\x07", "\u009b", "\u009d", "\u009c", "\x7f", "\u202e")


def _script(tmp_path: Path, answer: str, *, banner: str | None = None) -> Path:
    objs = [wire.system_init(SID, "/x", "Auto"), wire.assistant_final(SID, answer),
            wire.result_success(SID, "r", answer, 5)]
    lines = [json.dumps(o, ensure_ascii=False) for o in objs]  # C1 and bidi as they are
    if banner is not None:
        lines.insert(1, banner)
    script = tmp_path / "evil.ndjson"
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return script


def _executed(text: str) -> list[str]:
    return [seq for seq in EXECUTABLE if seq in text]


def test_json_outputs_escape_c1_and_bidi_controls(cli: Run, tmp_path: Path) -> None:
    """``-o json`` and ``-o ndjson``: the agent's C1 and bidi controls are ``\\u`` escapes
    (JSON's own: the value read back is the agent's, to the character)."""
    script = _script(tmp_path, EVIL)
    for output in ("json", "ndjson"):
        proc = cli("run", "--simulate", "--trust", "-o", output, "hi",
                   extra_env={"CURSOR_AGENT_SIM_SCRIPT": str(script)})
        assert proc.returncode == 0, proc.stderr
        assert _executed(proc.stdout) == [], (output, proc.stdout[-300:])
        last = json.loads(proc.stdout.splitlines()[-1])
        answer = last["result"] if output == "json" else last["data"]["result"]
        assert answer == EVIL, output


def test_dropin_text_at_a_terminal_shows_the_answer_inert(cli_env: dict[str, str],
                                                          tmp_path: Path) -> None:
    """``--output-format text`` at a terminal: the escapes are shown (``\\x1b[2J``), not run;
    on a pipe the answer stays the agent's, byte for byte (``agent -p``'s)."""
    script = _script(tmp_path, EVIL)
    env = {**cli_env, "CURSOR_AGENT_SIM_SCRIPT": str(script)}
    got = run_on_pty(["run", "--simulate", "--trust", "--output-format", "text", "hi"], env,
                     cli_env["TEST_WS"], stdout_tty=True)
    assert got.returncode == 0, got.screen[-500:]
    assert _executed(got.screen) == [], got.screen[-500:]
    assert "clear\\x1b[2J" in got.screen and "PWNED" in got.screen and "日本語 🚀" in got.screen
    piped = subprocess.run(
        [*CLI, "run", "--simulate", "--trust", "--output-format", "text",
         "hi"], capture_output=True, cwd=cli_env["TEST_WS"], env=env, check=False)
    assert piped.stdout == (EVIL + "\n").encode(), piped.stdout


def test_dropin_stream_json_at_a_terminal_runs_no_escape(cli_env: dict[str, str],
                                                         tmp_path: Path) -> None:
    """``--output-format stream-json|json`` at a terminal: a line that is not JSON (a banner)
    is shown inert, and the JSON lines' C1 and bidi controls are ``\\u`` escapes."""
    script = _script(tmp_path, EVIL, banner="Cursor \x1b]0;PWNED\x07 banner\x1b[2J")
    env = {**cli_env, "CURSOR_AGENT_SIM_SCRIPT": str(script)}
    for fmt in ("stream-json", "json"):
        got = run_on_pty(["run", "--simulate", "--trust", "--output-format", fmt, "hi"], env,
                         cli_env["TEST_WS"], stdout_tty=True)
        assert got.returncode == 0, got.screen[-500:]
        assert _executed(got.screen) == [], (fmt, got.screen[-500:])
        answers = [json.loads(line)["result"] for line in got.screen.splitlines()
                   if line.startswith('{"type":"result"')]
        assert answers == [EVIL], fmt  # the same value, escaped
