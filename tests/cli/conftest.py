"""Fixtures for driving the ``cursor-agent-api`` command as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the tests import pty_session, steer_agent

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:  # gone; or, for environ, a process that is not dumpable (serve, worker)
        return b""


def _our_live_child(pid: str) -> bool:
    """A live child of this process running the command line: a ``serve`` or ``worker``
    left behind shows no marker to a user who is not root (not dumpable: its environment is
    root's to read, and its command line need not name the test's directory)."""
    stat = _read(f"/proc/{pid}/stat")
    fields = stat.rpartition(b")")[2].split()  # (the name may hold spaces and parentheses)
    if len(fields) < 2 or fields[0] == b"Z" or int(fields[1]) != os.getpid():
        return False
    return b"cursor_agent_api" in _read(f"/proc/{pid}/cmdline")


def _procs_mentioning(marker: str) -> list[int]:
    """Processes whose command line or environment holds ``marker``, and the command line's
    processes this one started that are still alive. Each is read on its own: a ``serve``
    or ``worker`` (not dumpable) shows its command line to everyone, its environment only to
    root."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        if any(marker.encode() in _read(f"/proc/{entry}/{name}") for name in ("cmdline", "environ")) \
                or _our_live_child(entry):
            found.append(int(entry))
    return found


@pytest.fixture
def cli_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A workspace, a CURSOR_CONFIG_DIR and a CURSOR_AGENT_API_HOME of the test's own.

    After the test, no process that mentions the test's directory may be left.
    """
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("alpha\nbeta\n")
    env = {
        **os.environ,
        "CURSOR_CONFIG_DIR": str(tmp_path / "cursor-config"),
        "CURSOR_AGENT_API_HOME": str(tmp_path / "home"),
        "NO_COLOR": "1",
        "TEST_WS": str(ws),
    }
    for var in ("CURSOR_AGENT_SIM_FAULT", "CURSOR_AGENT_SIM_SCRIPT", "CURSOR_AGENT_SIM_DELAY",
                "CURSOR_API_KEY"):
        env.pop(var, None)
    yield env
    leftovers = [p for p in _procs_mentioning(str(tmp_path)) if p != os.getpid()]
    assert leftovers == [], f"processes left behind: {leftovers}"


@pytest.fixture
def cli(cli_env: dict[str, str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the command in the test's workspace; returns the completed process (text)."""

    def run(*args: str, stdin: str | None = None, extra_env: dict[str, str] | None = None,
            timeout: float = 90) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*CLI, *args], input=stdin, capture_output=True, text=True, timeout=timeout,
            cwd=cli_env["TEST_WS"], env={**cli_env, **(extra_env or {})}, check=False,
        )

    return run


@pytest.fixture
def postgres_url(pg_marked: None) -> Iterator[str]:
    """A fresh PostgreSQL database of the test's own (``worker``'s queue lives there), dropped
    afterwards; the test is skipped without ``CURSOR_AGENT_API_TEST_DATABASE_URL``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))
    from server_helpers import PG_ENV, pg_database

    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(f"needs PostgreSQL: set {PG_ENV}")
    url, drop = pg_database(base)
    try:
        yield url
    finally:
        drop()
