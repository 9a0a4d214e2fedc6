"""``chat``'s line history (``chat_history`` in the tool's data directory) holds every prompt
typed at the terminal: it is ``0600`` (readline's own mode) in a ``0700`` directory, as the
saved chats are (``chat`` made the directory with the umask: ``0755``)."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pexpect

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]


def test_the_history_file_is_private(cli_env: dict[str, str]) -> None:
    env = {**cli_env, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "40"}
    child = pexpect.spawn(CLI[0], [*CLI[1:], "chat", "--simulate", "--trust"], env=env,
                          cwd=env["TEST_WS"], encoding="utf-8", timeout=60, dimensions=(40, 100))
    try:
        child.expect("› ")
        child.sendline("hi")
        child.expect("done")
        child.expect("› ")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.terminate(force=True)
    history = Path(cli_env["CURSOR_AGENT_API_HOME"]) / "chat_history"
    assert "hi" in history.read_text()
    assert stat.S_IMODE(history.stat().st_mode) == 0o600
    assert stat.S_IMODE(history.parent.stat().st_mode) == 0o700
