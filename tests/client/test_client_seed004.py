"""Issue 12.4: seed 004's own usage examples, run as written on the simulator, see failures.

The two examples are read from the seed document itself (tests/data/seeds/004_*.txt) and run
in a fresh interpreter where ``agent`` is the simulator, with an ``auth`` fault: the agent
writes no result, only its error on stderr. The only change to the code: the second example
uses ``EventType`` without importing it, so the import is added.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cursor_agent_api.testing import sim_binary

SEED = next((Path(__file__).parents[1] / "data" / "seeds").glob("004_*.txt"))


def _example(title: str) -> str:
    text = SEED.read_text()
    section = text[text.index(f"### {title}"):]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None
    return match.group(1)


def _run(code: str, tmp_path: Path, fault: str) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "agent").symlink_to(sim_binary())
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CURSOR_AGENT_SIM_") and k != "CURSOR_API_KEY"}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
               CURSOR_AGENT_SIM_FAULT=fault, CURSOR_CONFIG_DIR=str(tmp_path / "cfg"))
    return subprocess.run([sys.executable, "-c", code], cwd=ws, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.mark.parametrize("fault", ["auth", "usage-limit", "trust"])
def test_processing_events_by_type_prints_the_failure(tmp_path, fault):
    proc = _run(_example("Processing Events by Type"), tmp_path, fault)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stdout.splitlines() if line.startswith("[Error: ")]
    assert len(errors) == 1, proc.stdout
    words = {"auth": "Authentication required", "usage-limit": "usage limit",
             "trust": "Workspace Trust Required"}[fault]
    assert words in errors[0] and "None" not in errors[0]


def test_accessing_raw_event_data_sees_the_error_result(tmp_path):
    code = "from cursor_agent_api import EventType\n" + _example("Accessing Raw Event Data")
    proc = _run(code, tmp_path, "auth")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "Type: result\nSubtype: error" in proc.stdout, proc.stdout
