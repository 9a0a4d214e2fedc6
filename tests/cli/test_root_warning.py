"""``serve`` and ``worker`` run as root: their agents, root too, read the secrets that being
not dumpable keeps from an ordinary user's agents. Each says so at start, in one line.

This machine's tests run as root: the warning is checked as it is, and its absence with the
capabilities that read any process dropped (``tests/server/proc_probe.py``), the case of an
ordinary user (and of root in a default Docker container)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))

from proc_probe import _as_an_ordinary_user, _can_drop_capabilities

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]
ROOT_WARNING = "warning: running as root: the agents it starts run as root too and can read"


def _full_caps() -> bool:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapBnd:"):
            return bool(int(line.split()[1], 16) >> 19 & 1)  # CAP_SYS_PTRACE
    return False


def _ended(command: list[str], env: dict[str, str], **popen: Any) -> str:
    """Run ``command`` to its end (stdout a full disk: serve stops as it prints its link; a
    worker whose database does not answer stops there); its stderr."""
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([*CLI, *command], stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=120, cwd=env["TEST_WS"], env=env, check=False, **popen)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stderr


def _serve(tmp_path: Path) -> list[str]:
    return ["serve", "--simulate", "--port", "0", "--database-url",
            f"sqlite+aiosqlite:///{tmp_path / 'server.sqlite3'}"]


WORKER = ["worker", "--simulate", "--database-url",
          "postgresql+asyncpg://nobody@127.0.0.1:1/none"]  # refused at once: no server there


@pytest.mark.skipif(os.geteuid() != 0 or not _full_caps(), reason="not root here")
@pytest.mark.parametrize("command", ["serve", "worker"])
def test_run_as_root_it_says_its_agents_can_read_its_secrets(cli_env: dict[str, str],
                                                             tmp_path: Path, command: str) -> None:
    # it said nothing: the token was theirs to read while it looked protected
    err = _ended(_serve(tmp_path) if command == "serve" else WORKER, cli_env)
    (line,) = [x for x in err.splitlines() if x.startswith(ROOT_WARNING)]
    assert line.endswith("; run it as an ordinary user")
    assert ("its token and database URL" if command == "serve" else "its database URL") in line


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_as_an_ordinary_user_it_says_nothing_of_it(cli_env: dict[str, str], tmp_path: Path,
                                                   command: str) -> None:
    if not _can_drop_capabilities():
        pytest.skip("root without CAP_SETPCAP: cannot start it as an ordinary user here")
    err = _ended(_serve(tmp_path) if command == "serve" else WORKER, cli_env,
                 preexec_fn=_as_an_ordinary_user)
    assert "agents it starts" not in err


def test_serve_dispatching_to_workers_starts_no_agent_and_says_nothing_of_it(
        cli_env: dict[str, str]) -> None:
    err = _ended(["serve", "--simulate", "--port", "0", "--dispatch", "queue", "--database-url",
                  "postgresql+asyncpg://nobody@127.0.0.1:1/none"], cli_env)
    assert "agents it starts" not in err
