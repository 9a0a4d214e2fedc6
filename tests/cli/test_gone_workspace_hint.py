"""A resumed `chat` whose workspace folder was deleted does not suggest continuing there."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

Run = Callable[..., subprocess.CompletedProcess[str]]


def test_chat_in_a_deleted_folder_suggests_no_command(cli: Run, cli_env: dict[str, str],
                                                      tmp_path: Path) -> None:
    folder = tmp_path / "gone"
    shutil.copytree(cli_env["TEST_WS"], folder)
    proc = cli("run", "--simulate", "--trust", "--workspace", str(folder), "list the files")
    assert proc.returncode == 0, proc.stderr
    (path,) = (Path(cli_env["CURSOR_AGENT_API_HOME"]) / "chats").glob("*.json")
    shutil.rmtree(folder)
    chat = cli("chat", "--simulate", "--trust", "--resume", path.stem, stdin="hello\n")
    said = chat.stdout + chat.stderr
    assert "does not exist" in said
    assert "continue later" not in said and "--resume" not in said, said
    assert "no longer exists" in said
