"""Against Cursor's real CLI — skipped unless asked for, since it needs an account and the network.

Run with: ``CURSOR_AGENT_API_REAL_CLI=1 CURSOR_API_KEY=… pytest tests/real`` (``agent`` on PATH,
or ``CURSOR_AGENT_API_REAL_BINARY=/path/to/agent``). It checks what the simulator stands in for:
the stream reads into the model with no raw line, the reassembled text equals ``result.result``
with and without partial output, and a resumed chat remembers.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from cursor_agent_api import AgentConfig, ConversationSession, CursorAgentClient, EventType

BINARY = os.environ.get("CURSOR_AGENT_API_REAL_BINARY") or shutil.which("agent") or ""
pytestmark = pytest.mark.skipif(
    os.environ.get("CURSOR_AGENT_API_REAL_CLI") != "1" or not BINARY,
    reason="real-CLI tests run only with CURSOR_AGENT_API_REAL_CLI=1 and the agent installed",
)


@pytest.mark.parametrize("partial", [False, True])
def test_real_turn_reads_cleanly(tmp_path: Path, partial: bool) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    config = AgentConfig(workspace=str(tmp_path), trust=True, agent_binary=BINARY,
                         stream_partial_output=partial, timeout=300)
    with CursorAgentClient(config) as client:
        result = client.query("Read the file notes.txt, then reply with exactly: READ-OK")
    assert result.success, result.error
    assert not [e for e in result.events if e.type is EventType.RAW]
    assert result.text == result.result
    assert "READ-OK" in result.result
    assert any(c.kind.value == "read" for c in result.tool_calls)


def test_real_resume_remembers(tmp_path: Path) -> None:
    config = AgentConfig(workspace=str(tmp_path), trust=True, agent_binary=BINARY, timeout=300)
    with ConversationSession(config) as session:
        assert session.send("Remember the codeword heron. Reply with OK.").success
        again = session.send("What codeword did I ask you to remember? One word.")
    assert again.success and "heron" in again.result.lower()
