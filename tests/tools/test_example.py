"""examples/order_desk.py runs on the simulator: two tools, one fails, both linked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cursor_agent_api.testing import sim_binary

EXAMPLE = Path(__file__).parents[2] / "examples" / "order_desk.py"


def _env(**values: str) -> dict[str, str]:
    """A bare environment, but the suite's ``PYTHONPATH`` (the tree under test) and its own
    per-user data directory (tests/conftest.py: never the user's), if it has them."""
    inherited = {k: os.environ[k] for k in ("PYTHONPATH", "XDG_DATA_HOME") if k in os.environ}
    return {"PATH": "/usr/bin:/bin", **inherited, **values}


def test_the_example_answers_with_one_tool_and_reports_the_other(cursor_sim_config_dir: Path) -> None:
    env = _env(CURSOR_CONFIG_DIR=str(cursor_sim_config_dir),
               CURSOR_AGENT_API_HOME=str(cursor_sim_config_dir / "api"))
    out = subprocess.run([sys.executable, str(EXAMPLE), "--agent", sim_binary()], capture_output=True,
                         text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    assert '`lookup_order` returned: {"id": "A1", "status": "shipped", "parcel": "P-9", "items": 3}' \
        in out.stdout
    assert "`track_parcel` failed: ConnectionError: the carrier's tracking service is down" in out.stdout
    assert "- lookup_order({'order_id': 'A1'}) returned {'id': 'A1'" in out.stdout
    assert "- track_parcel({'parcel': 'P-9'}) raised ConnectionError:" in out.stdout
    assert "Traceback" in out.stderr  # the traceback is logged, never sent to the agent
    assert "Traceback" not in out.stdout


def test_the_example_runs_on_the_simulator_without_a_config_dir(tmp_path: Path) -> None:
    """No ``CURSOR_CONFIG_DIR``: the client writes the approval entries to
    ``~/.cursor/projects/<slug>/mcp-approvals.json``, where the CLI (and so the simulator) reads
    them. ``HOME`` is a fresh directory, so nothing real is read or written."""
    home = tmp_path / "home"
    home.mkdir()
    env = _env(HOME=str(home))
    out = subprocess.run([sys.executable, str(EXAMPLE), "--agent", sim_binary()], capture_output=True,
                         text=True, timeout=300, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert '`lookup_order` returned: {"id": "A1", "status": "shipped", "parcel": "P-9", "items": 3}' \
        in out.stdout
    assert not list((home / ".cursor").rglob("mcp-approvals.json"))  # the turn's entries taken back
