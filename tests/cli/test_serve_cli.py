"""``cursor-agent-api serve`` from the command line: a bad ``--database-url`` is one line
naming the fix; the access log is off unless asked for."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import click
import httpx
import pytest

SERVE = [sys.executable, "-m", "cursor_agent_api.cli", "serve"]


def serve(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SERVE, "--port", "0", *args], capture_output=True, text=True,
                          timeout=60, env=env, check=False, cwd=env["TEST_WS"])


@pytest.mark.parametrize(
    ("url", "fix"),
    [("sqlite:///x.db", "use sqlite+aiosqlite:///x.db"),
     ("chats.db", "not a URL: for an SQLite file use sqlite+aiosqlite:////"),
     ("postgresql://me:hunter2@db.example/app",
      "use postgresql+asyncpg://me:***@db.example/app (the postgres extra: pip install"),
     ("mysql://db/app", "use sqlite+aiosqlite:///PATH or postgresql+asyncpg://"),
     ("postgres://me@db.example/app?password=hunter2",
      "the scheme is postgresql, not postgres: use postgresql+asyncpg://me@db.example/app?…")],
    ids=["sync-sqlite", "bare-path", "postgres-without-asyncpg", "other", "password-in-the-query"],
)
def test_bad_database_url_is_one_line_and_exit_2(cli_env: dict[str, str], url: str,
                                                 fix: str) -> None:
    proc = serve(["--database-url", url], cli_env)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert fix in line and "hunter2" not in line
    assert proc.stdout == ""  # no server was announced


def test_a_database_that_cannot_be_opened_is_one_line_and_exit_1(cli_env: dict[str, str]) -> None:
    """Nothing listens on port 1: the server says so in one line (no start-up traceback, no
    password) and exits 1 without announcing itself."""
    env = {**cli_env, "CURSOR_AGENT_API_DATABASE_URL": "postgresql+asyncpg://me:hunter2@127.0.0.1:1/app"}
    proc = serve([], env)  # (in the environment: on argv it is warned about, below)
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("Error: cannot open the database postgresql+asyncpg://me:***@127.0.0.1:1/app")
    assert "hunter2" not in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""



@pytest.mark.parametrize("command", ["serve", "worker"])
def test_a_secret_on_the_command_line_is_warned_about(cli_env: dict[str, str], command: str) -> None:
    # every local user reads argv (ps): the token and a database password belong in the
    # environment; serve and worker took them there without a word
    url = "postgresql+asyncpg://me:hunter2@127.0.0.1:1/app"  # (nothing listens: it stops)
    token = ["--token", "t" * 32] if command == "serve" else ["--simulate"]  # (no agent here)
    argv = [sys.executable, "-m", "cursor_agent_api.cli", command, *token, "--database-url", url,
            *(["--port", "0"] if command == "serve" else [])]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=cli_env,
                          check=False, cwd=cli_env["TEST_WS"])
    assert proc.returncode == 1 and "hunter2" not in proc.stderr, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if "on the command line" in line]
    assert any("--database-url" in w and "CURSOR_AGENT_API_DATABASE_URL" in w for w in warned)
    if command == "serve":
        assert any("--token" in w and "CURSOR_AGENT_API_TOKEN" in w for w in warned), warned
    env = {**cli_env, "CURSOR_AGENT_API_DATABASE_URL": url, "CURSOR_AGENT_API_TOKEN": "t" * 32}
    quiet = subprocess.run([sys.executable, "-m", "cursor_agent_api.cli", command,
                            *(["--port", "0"] if command == "serve" else ["--simulate"])],
                           capture_output=True,
                           text=True, timeout=60, env=env, check=False, cwd=cli_env["TEST_WS"])
    assert quiet.returncode == 1 and "on the command line" not in quiet.stderr, quiet.stderr

def test_missing_asyncpg_names_the_postgres_extra(cli_env: dict[str, str],
                                                  tmp_path: Path) -> None:
    fake = tmp_path / "no-asyncpg" / "asyncpg"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named asyncpg')\n")
    env = {**cli_env, "PYTHONPATH": str(fake.parent)}
    proc = serve(["--database-url", "postgresql+asyncpg://me@localhost/app"], env)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert "needs asyncpg" in line and "cursor-agent-api[postgres]" in line


TOKEN = "serve-cli-test-token-0123456789"


def _serve_one_request(env: dict[str, str], tmp_path: Path, args: list[str],
                       stdout: list[str] | None = None) -> str:
    """Start serve (stdout a pipe), ask for its health, stop it: its log (and, in ``stdout``,
    what it printed there)."""
    log = tmp_path / "serve.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [*SERVE, "--port", "0", "--simulate", "--token", TOKEN, "--database-url",
             f"sqlite+aiosqlite:///{tmp_path / 'server.sqlite3'}", *args],
            stdout=subprocess.PIPE, stderr=err, text=True, env=env, cwd=env["TEST_WS"],
            start_new_session=True)
        try:
            assert proc.stdout is not None
            proc.stdout.readline()
            url = proc.stdout.readline().split("Open: ", 1)[1].strip().split("/?code=")[0]
            with httpx.Client(base_url=url, timeout=30,
                              headers={"Authorization": f"token {TOKEN}"}) as client:
                assert client.get("/api/health").status_code == 200
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(60)
            if proc.stdout is not None:
                if stdout is not None:
                    stdout += proc.stdout.read().splitlines()
                proc.stdout.close()
    return log.read_text()


def test_under_nohup_a_hang_up_is_still_ignored(cli_env: dict[str, str], tmp_path: Path) -> None:
    # serve stops on SIGHUP as on SIGTERM (tests/server/test_restart.py), but not when it was
    # started to ignore it (nohup, SIG_IGN inherited)
    proc = subprocess.Popen(
        [*SERVE, "--port", "0", "--simulate", "--token", TOKEN, "--database-url",
         f"sqlite+aiosqlite:///{tmp_path / 'server.sqlite3'}"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=cli_env,
        cwd=cli_env["TEST_WS"], start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    try:
        assert proc.stdout is not None
        url = next(x for x in iter(proc.stdout.readline, "") if x.startswith("Open: "))
        url = url.split("Open: ", 1)[1].strip().split("/?code=")[0]
        proc.send_signal(signal.SIGHUP)
        with httpx.Client(base_url=url, timeout=30,
                          headers={"Authorization": f"token {TOKEN}"}) as client:
            for _ in range(3):  # (a signal is handled between two of the loop's steps)
                assert client.get("/api/health").status_code == 200
        assert proc.poll() is None
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_link_printed_to_a_log_says_it_expires(cli_env: dict[str, str], tmp_path: Path) -> None:
    # under a supervisor stdout is a log file or the journal: anyone who read it later signed
    # in with the printed code, good until used; it now says it lasts 10 minutes, and how to
    # get another link (the expiry itself: below, on the auth module's clock)
    printed: list[str] = []
    _serve_one_request(cli_env, tmp_path, [], stdout=printed)
    (note,) = [line for line in printed if "stdout is not a terminal" in line]
    assert "for 10 minutes" in note and "POST /api/auth/codes with the token" in note
    assert not note.startswith("Open: ")  # the Open: line is the link alone, as it was


def test_a_code_printed_to_a_log_is_refused_after_ten_minutes() -> None:
    from cursor_agent_api.cli.serve import open_lines
    from cursor_agent_api.server.auth import Auth
    from cursor_agent_api.server.settings import ServerSettings
    from cursor_agent_api.server.store import Store

    settings = ServerSettings(token="a" * 16, port=1)
    now = [0.0]
    auth = Auth(settings, Store("sqlite+aiosqlite://"), code_clock=lambda: now[0])

    def printed_code(terminal: bool) -> str:
        lines = open_lines(settings, auth, terminal)
        return next(x for x in lines if x.startswith("Open: ")).split("code=", 1)[1]

    to_log, to_log_late = printed_code(terminal=False), printed_code(terminal=False)
    on_terminal = printed_code(terminal=True)
    now[0] = 599.0
    assert auth.redeem_code(to_log)
    now[0] = 600.0
    assert not auth.redeem_code(to_log_late)
    now[0] = 10 * 365 * 86400.0  # on a terminal, as before: good until used
    assert auth.redeem_code(on_terminal)


def test_access_log_is_off_by_default(cli_env: dict[str, str], tmp_path: Path) -> None:
    log = _serve_one_request(cli_env, tmp_path, [])
    assert "GET /api/health" not in log
    assert "Application startup complete" in log  # the other logs are still there


def test_access_log_on_request(cli_env: dict[str, str], tmp_path: Path) -> None:
    log = _serve_one_request(cli_env, tmp_path, ["--access-log"])
    assert "GET /api/health" in log


@pytest.mark.parametrize("command", ["serve", "worker"])
@pytest.mark.parametrize(("option", "value"),
                         [("--run-timeout", "-5"), ("--run-timeout", "0"), ("--run-timeout", "nan"),
                          ("--idle-timeout", "-1"), ("--idle-timeout", "nan"),
                          ("--idle-timeout", "soon")])
def test_a_bad_timeout_is_refused_at_start(command: str, option: str, value: str) -> None:
    """A timeout that is not a positive number of seconds is a usage error before anything
    starts (it used to start the server, and every run then failed or timed out at once)."""
    from click.testing import CliRunner

    from cursor_agent_api.cli import main

    args = [command, option, value, "--simulate"]
    if command == "worker":
        args += ["--database-url", "postgresql+asyncpg://u@127.0.0.1:1/db"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}'" in result.output
    assert "Traceback" not in result.output


def test_serve_and_worker_share_their_agent_options() -> None:
    """The options that set up the agent's process mean the same on both commands, in the
    same words (one definition)."""
    from cursor_agent_api.cli.serve import serve as serve_command
    from cursor_agent_api.cli.worker import worker as worker_command

    def options(command: click.Command) -> dict[str, tuple[object, ...]]:
        params = command.params
        return {p.opts[0]: (p.help, p.multiple, getattr(p, "is_flag", False), p.type.name,
                            p.metavar, p.callback)
                for p in params}

    serve_options, worker_options = options(serve_command), options(worker_command)
    shared = ["--root", "--simulate", "--agent-binary", "--agent-env", "--pass-env",
              "--run-timeout", "--idle-timeout", "--log-level"]
    for name in shared:
        assert serve_options[name] == worker_options[name], name


def test_serve_freezes_its_start_up_objects(cli_env: dict[str, str], tmp_path: Path) -> None:
    """Once started, the server moves what start-up made (modules, the app, compiled
    statements) out of the garbage collector's reach: full collections during a run then
    walk only what the run made (BENCHMARKS.md, the write path)."""
    log = _serve_one_request(cli_env, tmp_path, ["--log-level", "debug"])
    (line,) = [x for x in log.splitlines() if "start-up objects frozen" in x]
    assert int(line.rsplit(": ", 1)[1].split()[0]) > 10_000


def _serve_to(stdout: int, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SERVE, "--port", "0", "--simulate", "--database-url",
         f"sqlite+aiosqlite:///{tmp_path / 'server.sqlite3'}"],
        stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120, env=env,
        cwd=env["TEST_WS"], check=False)


def test_a_link_that_cannot_be_printed_is_one_line_and_exit_1(cli_env: dict[str, str],
                                                              tmp_path: Path) -> None:
    """stdout a full disk: the server stops cleanly (its store closed) and says so in one
    line, as every command does (it died with three tracebacks in uvicorn's start-up)."""
    with open("/dev/full", "wb") as full:
        proc = _serve_to(full.fileno(), cli_env, tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == "Error: cannot write the output: No space left on device"
    assert "Application shutdown complete" in proc.stderr


def test_a_closed_pipe_ends_it_quietly(cli_env: dict[str, str], tmp_path: Path) -> None:
    """stdout a pipe nobody reads (``| true``): exit 1 without a word, as every command."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = _serve_to(write, cli_env, tmp_path)
    finally:
        os.close(write)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "Error" not in proc.stderr
    assert "Application shutdown complete" in proc.stderr
