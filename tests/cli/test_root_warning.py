"""``serve`` and ``worker`` run as root: their agents, root too, read the secrets that being
not dumpable keeps from an ordinary user's agents. Each says so at start, in one line.

This machine's tests run as root: the warning is checked as it is, and its absence with the
capabilities that read any process dropped (``tests/server/proc_probe.py``), the case of an
ordinary user (and of root in a default Docker container)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
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
    """Run ``command`` to its end (stdout a full disk: it stops as it prints that it is
    ready, once its database is open); its stderr."""
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([*CLI, *command], stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=120, cwd=env["TEST_WS"], env=env, check=False, **popen)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == "Error: cannot write the output: No space left on device"
    return proc.stderr


def _command(command: str, tmp_path: Path, postgres: Callable[[], str]) -> list[str]:
    if command == "serve":
        return ["serve", "--simulate", "--port", "0", "--database-url",
                f"sqlite+aiosqlite:///{tmp_path / 'server.sqlite3'}"]
    return ["worker", "--simulate", "--root", str(tmp_path), "--database-url", postgres()]


WORKER = pytest.param("worker", marks=pytest.mark.postgresql)


@pytest.mark.skipif(os.geteuid() != 0 or not _full_caps(), reason="not root here")
@pytest.mark.parametrize("command", ["serve", WORKER])  # (WORKER takes PostgreSQL)
def test_run_as_root_it_says_its_agents_can_read_its_secrets(
        cli_env: dict[str, str], tmp_path: Path, request: pytest.FixtureRequest,
        command: str) -> None:
    # it said nothing: the token was theirs to read while it looked protected
    err = _ended(_command(command, tmp_path, lambda: request.getfixturevalue("postgres_url")),
                 cli_env)
    (line,) = [x for x in err.splitlines() if x.startswith(ROOT_WARNING)]
    assert line.endswith("; run it as an ordinary user")
    assert ("its token and database URL" if command == "serve" else "its database URL") in line


@pytest.mark.parametrize("command", ["serve", WORKER])  # (WORKER takes PostgreSQL)
def test_as_an_ordinary_user_it_says_nothing_of_it(
        cli_env: dict[str, str], tmp_path: Path, request: pytest.FixtureRequest,
        command: str) -> None:
    if not _can_drop_capabilities():
        pytest.skip("root without CAP_SETPCAP: cannot start it as an ordinary user here")
    err = _ended(_command(command, tmp_path, lambda: request.getfixturevalue("postgres_url")),
                 cli_env, preexec_fn=_as_an_ordinary_user)
    assert "agents it starts" not in err


def test_serve_dispatching_to_workers_starts_no_agent_and_says_nothing_of_it(
        cli_env: dict[str, str], postgres_url: str) -> None:
    err = _ended(["serve", "--simulate", "--port", "0", "--dispatch", "queue", "--database-url",
                  postgres_url], cli_env)
    assert "agents it starts" not in err


def test_a_database_that_cannot_be_opened_is_still_said_in_one_line(
        cli_env: dict[str, str]) -> None:
    """The warning comes once the database is open, with the ready line: a failure before
    is its one line alone (test_serve_cli checks it too)."""
    proc = subprocess.run([*CLI, "serve", "--simulate", "--port", "0"],
                          capture_output=True, text=True, timeout=120, cwd=cli_env["TEST_WS"],
                          env={**cli_env, "CURSOR_AGENT_API_DATABASE_URL":
                               "postgresql+asyncpg://me@127.0.0.1:1/app"}, check=False)
    (line,) = proc.stderr.splitlines()
    assert line.startswith("Error: cannot open the database")
