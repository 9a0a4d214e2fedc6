"""``run -o ndjson | head -1``: the reader is gone, so the turn is cancelled, saved, its chat
id said on stderr, and the command ends quietly with status 1 (README: every turn of ``run``
and ``chat`` is saved) — it neither runs on unread nor ends unsaved."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

# (not from conftest: which conftest a bare import finds depends on the run)
CLI = [sys.executable, "-m", "cursor_agent_api.cli"]


CHAT = "0d8c1f9e-5b7a-4c3d-9e2f-1a2b3c4d5e6f"


def _agent(tmp_path: Path, fifo: Path) -> Path:
    """An agent that waits until the test has closed the output (``fifo`` opened), writes its
    first events, then works on until it is cancelled."""
    agent = tmp_path / "agent"
    agent.write_text(
        "#!/bin/sh\ncat >/dev/null\n"
        f"read x < '{fifo}'\n"
        f"echo '{{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"{CHAT}\"}}'\n"
        f"echo '{{\"type\":\"assistant\",\"message\":{{\"role\":\"assistant\",\"content\":"
        f"[{{\"type\":\"text\",\"text\":\"hi\\\\n\"}}]}},\"session_id\":\"{CHAT}\"}}'\n"
        "exec sleep 600\n")
    agent.chmod(agent.stat().st_mode | stat.S_IXUSR)
    return agent


@pytest.mark.parametrize("output", ["ndjson", "text"])
def test_a_closed_output_cancels_and_saves_the_turn(cli_env: dict[str, str], tmp_path: Path,
                                                     output: str) -> None:
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [*CLI, "run", "--agent-binary", str(_agent(tmp_path, fifo)), "--trust", "-o", output,
         "hi"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        cwd=cli_env["TEST_WS"], env=cli_env)
    assert proc.stdout is not None
    proc.stdout.close()  # `| head -1` is done
    with open(fifo, "w"):
        pass  # the agent writes, to a pipe nobody reads, and works on
    _, err = proc.communicate(timeout=60)
    lines = err.decode().strip().splitlines()
    assert proc.returncode == 1, err
    assert lines and lines[-1].startswith(f"chat {CHAT} · continue:"), err
    assert b"Traceback" not in err and b"Broken pipe" not in err
    saved = list((Path(cli_env["CURSOR_AGENT_API_HOME"]) / "chats").glob(f"{CHAT}*"))
    assert len(saved) == 1
    [turn] = json.loads(saved[0].read_text())["history"]
    assert turn["prompt"] == "hi" and turn["cancelled"] is True
