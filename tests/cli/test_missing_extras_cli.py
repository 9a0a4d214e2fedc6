"""``serve --dispatch queue`` and ``worker`` without the job queue's modules (the ``postgres``
extra half installed: asyncpg there, procrastinate not): one line naming the ``pip install``,
exit 1, no traceback — not a traceback from deep in the first job, nor a bare "No module named"."""

from __future__ import annotations

import subprocess
import sys

import pytest

URL = "postgresql+asyncpg://me@127.0.0.1:1/app"  # nothing listens: never reached


def _without(module: str, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The CLI with ``module`` not importable (``None`` in ``sys.modules``), the rest installed."""
    code = (f"import sys, runpy; sys.modules[{module!r}] = None; sys.argv = {['cursor-agent-api', *argv]!r}; "
            "runpy.run_module('cursor_agent_api.cli', run_name='__main__')")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env=env, check=False, cwd=env["TEST_WS"])


@pytest.mark.parametrize(("argv", "who"), [(["serve", "--simulate", "--port", "0", "--dispatch", "queue"],
                                            "--dispatch queue"),
                                           (["worker", "--simulate"], "the worker")])
def test_a_missing_queue_module_is_one_line_naming_the_extra(
        cli_env: dict[str, str], argv: list[str], who: str) -> None:
    env = {**cli_env, "CURSOR_AGENT_API_DATABASE_URL": URL, "CURSOR_AGENT_API_TOKEN": "t" * 32}
    proc = _without("procrastinate", argv, env)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == [
        f"Error: {who} needs the 'postgres' extra (procrastinate is missing): "
        "pip install 'cursor-agent-api[postgres]'"]


@pytest.mark.parametrize("module", ["alembic", "aiosqlite"])
@pytest.mark.parametrize(("argv", "who"), [(["serve", "--simulate", "--port", "0"], "the server"),
                                           (["worker", "--simulate"], "the worker")])
def test_a_missing_module_of_the_server_extra_is_one_line_naming_it(
        cli_env: dict[str, str], argv: list[str], who: str, module: str) -> None:
    """The store's modules, imported only as the database opens, were reported as the
    database failing ("cannot open the database …: import of alembic halted"), not as the
    extra missing (review of the change, finding 5)."""
    env = {**cli_env, "CURSOR_AGENT_API_DATABASE_URL": URL, "CURSOR_AGENT_API_TOKEN": "t" * 32}
    if who == "the server":  # a SQLite file of its own
        env["CURSOR_AGENT_API_DATABASE_URL"] = f"sqlite+aiosqlite:///{env['TEST_WS']}/server.sqlite3"
    proc = _without(module, argv, env)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == [
        f"Error: {who} needs the 'server' extra ({module} is missing): "
        "pip install 'cursor-agent-api[server]'"]


@pytest.mark.parametrize(("argv", "who"), [(["serve", "--simulate", "--port", "0"], "the server"),
                                           (["worker", "--simulate"], "the worker")])
@pytest.mark.parametrize("url", [URL, "sqlite+aiosqlite:///server.sqlite3"])
def test_without_sqlalchemy_a_database_url_is_still_one_line_naming_the_extra(
        cli_env: dict[str, str], argv: list[str], who: str, url: str) -> None:
    """The database URL is checked before the server's imports, with SQLAlchemy's URL class:
    without SQLAlchemy that check was a traceback ("No module named 'sqlalchemy.engine'"), for
    every worker and any serve given a URL (review of tonight's change, finding 1)."""
    env = {**cli_env, "CURSOR_AGENT_API_DATABASE_URL": url, "CURSOR_AGENT_API_TOKEN": "t" * 32}
    proc = _without("sqlalchemy", argv, env)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == [
        f"Error: {who} needs the 'server' extra (sqlalchemy is missing): "
        "pip install 'cursor-agent-api[server]'"]
