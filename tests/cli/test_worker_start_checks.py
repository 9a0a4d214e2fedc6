"""What ``worker`` refuses at its start, and the last line it says when it cannot start
(review of 2026-11-25, "a newcomer setting up distributed mode").

A worker without the agent said "taking runs" and failed every run it took ("cannot start the
agent: 'agent' was not found"), never reported unhealthy: it now refuses to start (exit 2),
resolving the agent as each run does (``cursor-agent`` for a missing ``agent``). A worker that
cannot open its database for a lasting reason (a wrong password, no such database) was told to
"start it again once the database answers": that advice is now only for a database that did
not answer; the lasting cause is said as ``serve`` says it."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

from sqlalchemy.engine import make_url

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]
SUPERVISE = "start it again once the database answers"


def _refused_url() -> str:
    """A PostgreSQL URL on a port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"postgresql+asyncpg://someone:hunter2@127.0.0.1:{port}/app"


def _worker(env: dict[str, str], url: str, *args: str, path: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    extra = {"PATH": path} if path is not None else {}
    return subprocess.run(
        [*CLI, "worker", "--root", env["TEST_WS"], "--name", "w-start", *args],
        capture_output=True, text=True, timeout=120, cwd=env["TEST_WS"],
        env={**env, **extra, "CURSOR_AGENT_API_DATABASE_URL": url}, check=False)


def test_a_worker_without_the_agent_refuses_to_start(cli_env: dict[str, str], tmp_path: Path) -> None:
    # it started ("taking runs") and failed every run it took
    empty = tmp_path / "bin"
    empty.mkdir()
    proc = _worker(cli_env, _refused_url(), path=str(empty))
    assert proc.returncode == 2, proc.stderr
    assert "taking runs" not in proc.stdout and "Traceback" not in proc.stderr
    last = proc.stderr.splitlines()[-1]
    assert last.startswith("Error: cannot start the agent: 'agent' was not found — install the "
                           "Cursor CLI"), last
    assert "--agent-binary" in last and "--simulate" in last


def test_a_missing_agent_binary_path_refuses_too(cli_env: dict[str, str], tmp_path: Path) -> None:
    missing = tmp_path / "no-such-agent"
    proc = _worker(cli_env, _refused_url(), "--agent-binary", str(missing))
    assert proc.returncode == 2, proc.stderr
    assert f"cannot start the agent: '{missing}' was not found" in proc.stderr


def test_the_agent_is_found_as_a_run_finds_it(cli_env: dict[str, str], tmp_path: Path) -> None:
    # 'agent' missing, 'cursor-agent' on PATH: the runs start cursor-agent, so the worker starts
    # (and goes on to its database, refused here: exit 1, named)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "cursor-agent").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "cursor-agent").chmod(0o755)
    proc = _worker(cli_env, _refused_url(), path=str(bin_dir))
    assert proc.returncode == 1, proc.stderr
    assert "cannot open the database" in proc.stderr.splitlines()[-1]


def test_simulate_needs_no_agent(cli_env: dict[str, str], tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    proc = _worker(cli_env, _refused_url(), "--simulate", path=str(empty))
    assert proc.returncode == 1, proc.stderr
    assert "cannot open the database" in proc.stderr.splitlines()[-1]


def test_a_wrong_password_is_not_told_to_wait(cli_env: dict[str, str], postgres_url: str) -> None:
    # it said "...password authentication failed ... (DBAPIError); start it again once the
    # database answers; run workers under a supervisor ..."
    url = make_url(postgres_url).set(password="not-the-password").render_as_string(hide_password=False)
    proc = _worker(cli_env, url, "--simulate")
    assert proc.returncode == 1, proc.stderr
    last = proc.stderr.splitlines()[-1]
    assert "password authentication failed" in last and last.endswith("(DBAPIError)"), last
    assert SUPERVISE not in proc.stderr and "not-the-password" not in proc.stderr


def test_a_database_that_does_not_exist_is_not_told_to_wait(
        cli_env: dict[str, str], postgres_url: str) -> None:
    url = make_url(postgres_url).set(database="skewfix_no_such_database").render_as_string(
        hide_password=False)
    proc = _worker(cli_env, url, "--simulate")
    assert proc.returncode == 1, proc.stderr
    last = proc.stderr.splitlines()[-1]
    assert 'database "skewfix_no_such_database" does not exist' in last, last
    assert SUPERVISE not in last


def test_a_database_that_does_not_answer_keeps_the_advice(cli_env: dict[str, str]) -> None:
    proc = _worker(cli_env, _refused_url(), "--simulate")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines()[-1].endswith(
        f"; {SUPERVISE}; run workers under a supervisor that restarts them (docs/distributed.md)")


def test_a_heartbeat_the_live_window_cannot_hold_is_refused(cli_env: dict[str, str]) -> None:
    # a worker with --heartbeat 90 was taken, and counted as stopped between its heartbeats: a
    # newer version's start migrated the schema under it
    from cursor_agent_api.server.store import engine

    longest = getattr(engine, "LONGEST_HEARTBEAT", 600.0)  # (600: the old code's limit)
    assert longest * 2 <= engine.LIVE_WITHIN
    proc = _worker(cli_env, _refused_url(), "--simulate", "--heartbeat", f"{longest + 1:g}")
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line == (f"Error: --heartbeat {longest + 1:g} is over {longest:g}: a worker counts as "
                    f"running for {engine.LIVE_WITHIN:g} s after its last heartbeat (a schema "
                    "upgrade waits for the running ones, docs/distributed.md), so two heartbeats "
                    "must fit in that time"), line
    ok = _worker(cli_env, _refused_url(), "--simulate", "--heartbeat", f"{longest:g}")
    assert ok.returncode == 1 and "cannot open the database" in ok.stderr  # taken: on to its database


def test_ctrl_c_while_a_worker_starts_dies_from_the_sigint(cli_env: dict[str, str]) -> None:
    # A Ctrl-C before the worker takes signals itself (here: its database connecting, the host
    # silent) ended it with status 0, as if it had done its work: a supervisor or a script
    # read a success. Then with status 130; it now dies from the SIGINT (a shell's $? 130, a
    # shell loop stops), as `run` and `replay` do.
    with socket.socket() as silent:  # accepts, never answers (a host that stopped answering)
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"postgresql+asyncpg://someone:hunter2@127.0.0.1:{silent.getsockname()[1]}/app"
        proc = subprocess.Popen(
            [*CLI, "worker", "--root", cli_env["TEST_WS"], "--name", "w-start", "--simulate"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cli_env["TEST_WS"],
            env={**cli_env, "CURSOR_AGENT_API_DATABASE_URL": url})
        try:
            silent.settimeout(60)
            held, _ = silent.accept()  # the worker is connecting to its database
            with held:
                proc.send_signal(signal.SIGINT)
                out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == -signal.SIGINT, (proc.returncode, err)
    assert "taking runs" not in out and "Traceback" not in err


def test_a_worker_given_any_other_database_says_it_needs_postgresql(cli_env: dict[str, str]) -> None:
    # audit 15: `sqlite:///x.db` was told "use sqlite+aiosqlite:///x.db", which it then refused
    for url in ("sqlite:///x.db", "sqlite+aiosqlite:///x.db", "x.db", "mysql://h/db"):
        proc = _worker(cli_env, url, "--simulate")
        assert proc.returncode == 2, proc.stderr
        last = proc.stderr.splitlines()[-1]
        assert "the API servers' PostgreSQL database" in last, (url, last)
        assert "sqlite+aiosqlite" not in proc.stderr, (url, proc.stderr)
