"""The simulator outside pytest (issue 12, point 2): ``cursor_agent_api.testing``'s helpers
work on an install without pytest, and ``AgentConfig(agent_binary="cursor-agent-sim")`` finds
the bundled simulator when the virtualenv's ``bin/`` is not on ``PATH``.

Each check runs in a fresh Python process (the one of this virtualenv), with pytest made
unimportable or with a ``PATH`` that holds only the system's directories."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cursor_agent_api.config import AgentConfig
from cursor_agent_api.runtime.argv import resolve_binary
from cursor_agent_api.sim import locate

VENV_BIN = Path(sys.executable).parent
SYSTEM_PATH = os.pathsep.join(p for p in ("/usr/bin", "/bin") if Path(p).is_dir())


def _python(
    code: str, *args: str, env: dict[str, str], no_pytest: bool = False
) -> subprocess.CompletedProcess[str]:
    source = (NO_PYTEST if no_pytest else "") + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", source, *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )


def _env(tmp_path: Path) -> dict[str, str]:
    """A clean environment: the system's PATH only, a private config dir and home."""
    env = {"PATH": SYSTEM_PATH, "HOME": str(tmp_path), "CURSOR_CONFIG_DIR": str(tmp_path / "cfg")}
    assert str(VENV_BIN) not in env["PATH"].split(os.pathsep)
    return env


NO_PYTEST = """
import sys
sys.modules["pytest"] = None  # "import pytest" now raises ModuleNotFoundError
"""


def test_helpers_work_without_pytest(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    run = _python("""
    import os, subprocess
    from cursor_agent_api.testing import sim_binary, sim_env
    env = {**os.environ, **sim_env(seed="1", config_dir=sys.argv[2])}
    out = subprocess.run([sim_binary(), "-p", "--trust", "--workspace", sys.argv[1], "What is 2 + 2?"],
                         env=env, capture_output=True, text=True, timeout=120)
    print(out.returncode, out.stdout.strip(), os.path.isabs(sim_binary()))
    """, str(ws), str(tmp_path / "cfg"), env=_env(tmp_path), no_pytest=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["0", "4", "True"]


def test_fixtures_without_pytest_say_what_is_missing(tmp_path: Path) -> None:
    run = _python("""
    import cursor_agent_api.testing as testing
    assert "sim_binary" in testing.__all__ and "cursor_sim_config" not in testing.__all__
    try:
        testing.cursor_sim_config
    except ImportError as e:
        print(e)
    """, env=_env(tmp_path), no_pytest=True)
    assert run.returncode == 0, run.stderr
    assert "cursor_sim_config is a pytest fixture" in run.stdout and "pip install pytest" in run.stdout


def test_agent_binary_cursor_agent_sim_without_the_venv_on_path(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    run = _python("""
    import sys
    from cursor_agent_api import AgentConfig, CursorAgentClient
    config = AgentConfig(agent_binary="cursor-agent-sim", workspace=sys.argv[1], trust=True)
    with CursorAgentClient(config) as client:
        result = client.query("What is 2 + 2?", timeout=120)
    print(result.success, result.result if result.success else result.error)
    """, str(ws), env=_env(tmp_path))
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "4"], run.stdout


def test_resolve_binary_names_the_bundled_simulator(tmp_path: Path) -> None:
    config = AgentConfig(agent_binary="cursor-agent-sim")
    found = resolve_binary(config, {"PATH": str(tmp_path)})  # nothing on that PATH
    assert found == locate.sim_binary()
    assert os.path.isabs(found) and os.access(found, os.X_OK)
    # any other missing name is still returned unchanged (starting it fails clearly)
    assert resolve_binary(AgentConfig(agent_binary="no-such-agent"), {"PATH": str(tmp_path)}) == (
        "no-such-agent")
    # a cursor-agent-sim on PATH (a wrapper of the user's) still wins
    wrapper = tmp_path / "cursor-agent-sim"
    wrapper.write_text("#!/bin/sh\nexit 0\n")
    wrapper.chmod(0o755)
    assert resolve_binary(config, {"PATH": str(tmp_path)}) == str(wrapper)


def test_installed_script_is_found_from_the_distribution_record() -> None:
    """Where pip recorded the console script, wherever the package is installed (a user
    install's ~/.local/bin is not beside sys.executable)."""
    found = locate.installed_script("cursor-agent-sim")
    if found is None:
        pytest.fail("the test environment installs the package as a distribution")
    assert Path(found).resolve() == (VENV_BIN / "cursor-agent-sim").resolve()
    assert locate.installed_script("no-such-script") is None
