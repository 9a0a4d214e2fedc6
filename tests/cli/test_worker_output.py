"""``worker`` whose stdout cannot be written: said as ``serve`` says it (one line, exit 1; a
closed pipe ends it quietly), never as a raw ``OSError``. Needs PostgreSQL (the worker's
queue lives there): a fresh database of its own."""

from __future__ import annotations

import os
import subprocess
import sys

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]
DRAIN = "stopping: no new run is taken"
"""The line of a signal's stop: no signal comes here (review 11: it was said, "0 run(s)")."""


def _worker_to(stdout: int, env: dict[str, str], url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "worker", "--simulate", "--root", env["TEST_WS"], "--name", "w-output"],
        stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120, cwd=env["TEST_WS"],
        env={**env, "CURSOR_AGENT_API_DATABASE_URL": url}, check=False)


def test_a_ready_line_that_cannot_be_printed_is_one_line_and_exit_1(
        cli_env: dict[str, str], postgres_url: str) -> None:
    # it said "Error: the worker stopped: [Errno 28] No space left on device (OSError)"
    with open("/dev/full", "wb") as full:
        proc = _worker_to(full.fileno(), cli_env, postgres_url)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == "Error: cannot write the output: No space left on device"
    assert DRAIN not in proc.stderr, proc.stderr


def test_a_closed_pipe_ends_it_quietly(cli_env: dict[str, str], postgres_url: str) -> None:
    # it said "Error: the worker stopped: [Errno 32] Broken pipe (BrokenPipeError)"
    read, write = os.pipe()
    os.close(read)
    try:
        proc = _worker_to(write, cli_env, postgres_url)
    finally:
        os.close(write)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "Error" not in proc.stderr
    assert DRAIN not in proc.stderr, proc.stderr


def _refused_url() -> str:
    """A PostgreSQL URL (with a password) on a port nothing listens on."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"postgresql+asyncpg://someone:hunter2@127.0.0.1:{port}/app"


def test_a_database_it_cannot_open_is_named_with_what_to_do(cli_env: dict[str, str]) -> None:
    # it said "Error: the worker stopped: [Errno 111] Connect call failed ... (ConnectionRefusedError)"
    # (serve names the database; the worker did not, nor what to do)
    url = _refused_url()
    proc = _worker_to(subprocess.DEVNULL, cli_env, url)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "hunter2" not in proc.stderr
    last = proc.stderr.splitlines()[-1]
    shown = url.replace("hunter2", "***")
    assert last.startswith(f"Error: cannot open the database {shown}: "), last
    assert "(ConnectionRefusedError)" in last and last.endswith(
        "; start it again once the database answers; run workers under a supervisor that "
        "restarts them (docs/distributed.md)"), last
