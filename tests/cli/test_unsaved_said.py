"""A turn whose chat id from the agent is not a UUID is not saved: it says so, and its footer
suggests no `--resume` that cannot work."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import orjson

Run = Callable[..., subprocess.CompletedProcess[str]]


def test_a_turn_not_saved_for_its_chat_id_says_so(cli: Run, cli_env: dict[str, str],
                                                  tmp_path: Path) -> None:
    agent = tmp_path / "agent_odd_id.py"
    lines = [
        {"type": "system", "subtype": "init", "session_id": "chat-42", "model": "m", "cwd": "/"},
        {"type": "result", "subtype": "success", "result": "hi", "session_id": "chat-42"},
    ]
    body = "import sys\nsys.stdin.read()\n" + "".join(
        f"print({orjson.dumps(line).decode()!r})\n" for line in lines)
    agent.write_text(f"#!{sys.executable}\n{body}")
    agent.chmod(0o755)
    proc = cli("run", "--agent-binary", str(agent), "--trust", "hello")
    assert proc.returncode == 0, proc.stderr  # the turn itself worked
    (warning,) = [line for line in proc.stderr.splitlines() if "not saved" in line]
    assert "chat-42" in warning and "not a UUID" in warning
    assert "--resume" not in proc.stdout + proc.stderr  # no command that cannot work
    assert not (Path(cli_env["CURSOR_AGENT_API_HOME"]) / "chats").is_dir()
