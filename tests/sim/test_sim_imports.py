"""The simulator imports only what the command it runs needs: the suite starts it hundreds
of times, and the command line's ``--simulate`` imports the package to locate it.

Each check runs in a fresh Python and looks at ``sys.modules`` when it is done (what was
imported, not how long it took).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

_PROBE = """
import json, sys
from cursor_agent_api.sim import main
code = main(sys.argv[2:])
sys.stdout.flush()
with open(sys.argv[1], "w") as f:
    json.dump({"code": code, "modules": sorted(sys.modules)}, f)
"""


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CURSOR_AGENT_SIM_", "CURSOR_API_KEY"))}
    env["CURSOR_CONFIG_DIR"] = str(tmp_path / "config")
    env["CURSOR_API_KEY"] = "key-for-the-simulator"
    return env


def _imported(tmp_path: Path, *args: str) -> set[str]:
    """The modules loaded by ``cursor-agent-sim ARGS`` (exit status 0), in a fresh Python."""
    out = tmp_path / "modules.json"
    done = subprocess.run([sys.executable, "-c", _PROBE, str(out), *args], env=_env(tmp_path),
                          capture_output=True, timeout=120, check=False)
    assert out.exists(), done.stderr
    found = json.loads(out.read_text())
    assert found["code"] == 0, done.stderr
    return set(found["modules"])


def test_locating_the_simulator_imports_none_of_it(tmp_path: Path) -> None:
    """``cursor_agent_api.sim.locate`` (the command line's ``--simulate``, the fixtures) loads
    the package, which used to import the whole simulator; and finding the simulator next to
    this Python needs no installed metadata (``importlib.metadata``: email, zipfile, csv)."""
    out = tmp_path / "modules.json"
    code = ("import json, sys\nfrom cursor_agent_api.sim.locate import sim_binary\n"
            "sim_binary()\n"
            f"json.dump(sorted(sys.modules), open({str(out)!r}, 'w'))")
    subprocess.run([sys.executable, "-c", code], env=_env(tmp_path), timeout=120, check=True)
    modules = json.loads(out.read_text())
    assert [m for m in modules if m.startswith("cursor_agent_api.")] == [
        "cursor_agent_api.sim", "cursor_agent_api.sim.locate"]
    if (Path(sys.executable).parent / "cursor-agent-sim").exists():  # this virtualenv's
        assert "importlib.metadata" not in modules


def test_a_print_mode_turn_imports_no_mcp_client_machinery(tmp_path: Path) -> None:
    """A turn with no MCP server configured starts no thread pool, no event loop: no
    ``concurrent.futures`` (and its ``logging``), ``asyncio``, ``anyio``, nor the ACP side.
    It writes events and folds none: of the protocol it needs the events, not the reader,
    the transcript, its changes and its log."""
    ws = tmp_path / "ws"
    ws.mkdir()
    modules = _imported(tmp_path, "-p", "--trust", "--workspace", str(ws),
                        "--output-format", "stream-json", "hello")
    assert "cursor_agent_api.sim.turn" in modules
    assert sorted(modules & {"concurrent.futures", "logging", "asyncio", "anyio", "mcp",
                             "cursor_agent_api.sim.acp", "cursor_agent_api.runtime",
                             "cursor_agent_api.client"}) == []
    assert sorted(modules & {"cursor_agent_api.protocol.transcript",
                             "cursor_agent_api.protocol.changes", "cursor_agent_api.protocol.reader",
                             "cursor_agent_api.protocol.event_log"}) == []


def test_version_imports_no_agent(tmp_path: Path) -> None:
    modules = _imported(tmp_path, "--version")
    assert sorted(modules & {"cursor_agent_api.sim.turn", "cursor_agent_api.sim.agent",
                             "cursor_agent_api.sim.planner"}) == []
