"""An agent killed by a signal (SIGKILL: the OOM killer, ``kill -9``) is said as such —
"was killed by SIGKILL" — not as a bare "exit code 137", in print mode and ACP mode."""

from __future__ import annotations

import pytest

from cursor_agent_api import AgentProcessError, CursorAgentClient
from cursor_agent_api.runtime.stderr import classify_failure


@pytest.mark.parametrize("transport", ["print", "acp"])
def test_an_agent_killed_by_sigkill_is_named(sim, transport, tmp_path):
    agent = tmp_path / "agent"
    agent.write_text("#!/bin/sh\nkill -KILL $$\n")
    agent.chmod(0o755)
    with CursorAgentClient(sim(agent_binary=str(agent), transport=transport)) as client:
        result = client.query("hi")
    assert isinstance(result.exception, AgentProcessError)
    assert result.exit_code in (137, None) and result.exception.exit_code == 137
    assert "killed by SIGKILL (exit code 137; out of memory" in str(result.exception)


def test_a_plain_exit_code_is_not_a_signal():
    assert str(classify_failure(3, "")).startswith("the agent exited with code 3 and printed")
    assert "killed by SIGTERM (exit code 143)" in str(classify_failure(143, "Terminated"))
