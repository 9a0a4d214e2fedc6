"""``--simulate`` and ``--agent-binary`` together: one rule for every command — refused, exit 2,
in one line naming both (``run`` ran the simulator and ignored the binary; ``serve`` ran the
binary while its banner, ``/api/health`` and the page said "simulated")."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

Run = Callable[..., subprocess.CompletedProcess[str]]
CLI = [sys.executable, "-m", "cursor_agent_api.cli"]


@pytest.fixture
def real_agent(tmp_path: Path) -> Path:
    """An executable that is not the simulator, which must not run."""
    agent = tmp_path / "real" / "agent"
    agent.parent.mkdir()
    ran = tmp_path / "real" / "ran"
    agent.write_text(f"#!/bin/sh\ntouch {ran}\necho '{{\"type\":\"result\"}}'\n")
    agent.chmod(0o755)
    return agent


def _refused(proc: subprocess.CompletedProcess[str], agent: Path) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    (line,) = proc.stderr.splitlines()
    assert "--simulate" in line and "--agent-binary" in line and "one of them" in line
    assert "Open:" not in proc.stdout and "SIMULATED" not in proc.stdout
    assert not (agent.parent / "ran").exists()


@pytest.mark.parametrize("command", ["run", "chat"])
def test_run_and_chat_refuse_the_pair(cli: Run, real_agent: Path, command: str) -> None:
    proc = cli(command, "--simulate", "--agent-binary", str(real_agent), "--trust", "-o", "text",
               *(["hi"] if command == "run" else []), stdin="hi\n")
    _refused(proc, real_agent)


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_serve_and_worker_refuse_the_pair(cli_env: dict[str, str], real_agent: Path,
                                          command: str) -> None:
    args = [*CLI, command, "--simulate", "--agent-binary", str(real_agent)]
    if command == "serve":
        args += ["--port", "0", "--database-url",
                 f"sqlite+aiosqlite:///{Path(cli_env['TEST_WS']).parent / 'db.sqlite3'}"]
    else:
        args += ["--database-url", "postgresql+asyncpg://u@127.0.0.1:1/db"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=60, env=cli_env,
                          check=False, cwd=cli_env["TEST_WS"])
    _refused(proc, real_agent)


def test_either_alone_still_runs(cli: Run) -> None:
    assert cli("run", "--simulate", "--trust", "-o", "text", "hi").returncode == 0
