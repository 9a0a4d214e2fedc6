"""``python -m cursor_agent_api`` runs the command, as ``python -m cursor_agent_api.cli`` and the
``cursor-agent-api`` script do (it said "No module named cursor_agent_api.__main__")."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cursor_agent_api import __version__


@pytest.mark.parametrize("module", ["cursor_agent_api", "cursor_agent_api.cli"])
def test_python_dash_m_runs_the_command(module: str) -> None:
    version = subprocess.run([sys.executable, "-m", module, "--version"],
                             capture_output=True, text=True, timeout=60, check=False)
    assert (version.returncode, version.stderr) == (0, "")
    assert version.stdout.strip().endswith(f"version {__version__}")
    usage = subprocess.run([sys.executable, "-m", module, "serve", "--port", "not-a-port"],
                           capture_output=True, text=True, timeout=60, check=False)
    assert usage.returncode == 2, usage.stderr
    assert f"python -m {module} serve" in usage.stderr
