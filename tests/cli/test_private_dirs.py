"""The tool's data directory and its ``chats`` are created ``0700`` (docs/server.md: "a
directory created 0700"): they hold every prompt and answer. ``~/.local/share/cursor-agent-api``
was made with the umask (``0755``: readable by every local user), only ``chats`` ``0700``."""

from __future__ import annotations

import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

Run = Callable[..., subprocess.CompletedProcess[str]]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_run_creates_the_data_directories_private(cli: Run, tmp_path: Path) -> None:
    home = tmp_path / "share" / "cursor-agent-api"
    proc = cli("run", "--simulate", "--trust", "hi",
               extra_env={"CURSOR_AGENT_API_HOME": str(home)})
    assert proc.returncode == 0, proc.stderr
    assert _mode(home) == 0o700
    assert _mode(home / "chats") == 0o700
