"""With ``--simulate`` the agent that ran is the simulator: "not logged in" names its login
(``cursor-agent-sim login``), not the real CLI's ``agent login``, which is not installed."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

from cursor_agent_api.testing import sim_binary

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.mark.parametrize("output", [[], ["--output-format", "json"]], ids=["text", "drop-in"])
def test_the_simulators_login_is_named(cli: Run, output: list[str]) -> None:
    proc = cli("run", "--simulate", "--trust", *output, "hi",
               extra_env={"CURSOR_AGENT_SIM_FAULT": "auth"})
    assert proc.returncode == 1
    (line,) = [ln for ln in proc.stderr.splitlines() if "✗" in ln]
    assert "run `cursor-agent-sim login` or set CURSOR_API_KEY" in line
    assert "`agent login`" not in line


def test_the_named_command_is_the_simulators(cli_env: dict[str, str]) -> None:
    proc = subprocess.run([sim_binary(), "login"], capture_output=True, text=True, check=False,
                          timeout=30, env=cli_env)
    assert proc.returncode == 0, proc.stderr
    assert sim_binary().endswith("/cursor-agent-sim")
