"""A database URL whose scheme SQLAlchemy has no dialect for (``postgres://``, the scheme
hosting platforms put in ``DATABASE_URL``; ``sqlite3://``; anything unknown) is refused in one
line naming the fix, exit 2 — by ``serve`` and ``worker``, given as ``--database-url`` or
``CURSOR_AGENT_API_DATABASE_URL`` (it was a ``NoSuchModuleError`` traceback). So is an SQLite
URL that names no file (``sqlite+aiosqlite:///$DB`` with ``DB`` unset) or ``:memory:``: the store
would be in memory, and every chat lost at stop (it was accepted without a word)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cursor_agent_api.database_urls import database_url_problem, libpq_url

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]
FORMS = "use sqlite+aiosqlite:///PATH or postgresql+asyncpg://USER@HOST/DB"

CASES = [
    ("postgres://me:hunter2@127.0.0.1/app",
     "the scheme is postgresql, not postgres: use postgresql+asyncpg://me:***@127.0.0.1/app"),
    ("postgres+asyncpg://me:hunter2@127.0.0.1:54329/app",
     "use postgresql+asyncpg://me:***@127.0.0.1:54329/app"),
    ("sqlite3:///x.db", f"sqlite3:///x.db: unsupported database; {FORMS}"),
    ("foo://", f"foo://: unsupported database; {FORMS}"),
    ("sqlite+aiosqlite:///", "sqlite+aiosqlite:/// names no database file (SQLite would keep it "
     "in memory, and lose every chat when the server stops): use sqlite+aiosqlite:///PATH"),
    ("sqlite+aiosqlite://", "names no database file"),
    ("sqlite+aiosqlite:///:memory:", "sqlite+aiosqlite:///:memory: is an in-memory database "
     "(every chat lost when the server stops): use sqlite+aiosqlite:///PATH"),
    ("sqlite+aiosqlite:///file:chats?mode=memory&uri=true",
     "is an in-memory database (every chat lost when the server stops): use "
     "sqlite+aiosqlite:///PATH"),
    # both TLS forms given, and different: the drivers would have used different modes (the
    # store's ssl=, the job queue's sslmode=), one of them maybe without TLS, without a word
    ("postgresql+asyncpg://me:hunter2@127.0.0.1:54329/app?ssl=disable&sslmode=require",
     "postgresql+asyncpg://me:***@127.0.0.1:54329/app?…: ssl=disable and sslmode=require ask for "
     "different TLS modes: keep one of them"),
    # libpq's connect_timeout is no setting asyncpg knows (it would reach the server as one, and
    # every store connection fail): the store's own bound is said instead
    ("postgresql+asyncpg://me:hunter2@127.0.0.1:54329/app?connect_timeout=5",
     "postgresql+asyncpg://me:***@127.0.0.1:54329/app?…: connect_timeout= in the URL is not "
     "used: every connection waits store_connect_timeout (10 s by default) instead; drop it"),
    ("postgresql+asyncpg://me:hunter2@127.0.0.1:54329/app?prepared_statement_cache_size=none",
     "postgresql+asyncpg://me:***@127.0.0.1:54329/app?…: prepared_statement_cache_size= takes a "
     "whole number (0: no cache)"),
]
IDS = ["postgres", "postgres+asyncpg", "sqlite3", "unknown", "sqlite-no-path", "sqlite-no-slash",
       "sqlite-memory", "sqlite-uri-memory", "tls-modes-differ", "connect-timeout",
       "statement-cache"]


def _command(command: str, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = [*CLI, command, "--simulate"] + (["--port", "0"] if command == "serve" else [])
    return subprocess.run([*base, *args], capture_output=True, text=True, timeout=60, env=env,
                          check=False, cwd=env["TEST_WS"])


@pytest.mark.parametrize(("url", "fix"), CASES, ids=IDS)
def test_the_problem_is_one_line_naming_the_fix(url: str, fix: str) -> None:
    problem = database_url_problem(url)
    assert problem is not None and fix in problem and "hunter2" not in problem


@pytest.mark.parametrize("command", ["serve", "worker"])
@pytest.mark.parametrize(("url", "fix"), CASES, ids=IDS)
def test_serve_and_worker_refuse_it_in_one_line(cli_env: dict[str, str], command: str, url: str,
                                                fix: str) -> None:
    proc = _command(command, ["--database-url", url], cli_env)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.splitlines()
    if command == "worker" and not url.startswith("postgres"):
        # a worker needs the API servers' PostgreSQL database: no advice about SQLite URLs
        # (audit 15: it suggested sqlite+aiosqlite:///x.db, which it then refused)
        fix = "must name the API servers' PostgreSQL database"
    assert line.startswith("Error: --database-url ") and fix in line
    assert "hunter2" not in line and proc.stdout == ""


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_from_the_environment_it_names_the_variable(cli_env: dict[str, str],
                                                    command: str) -> None:
    env = {**cli_env, "CURSOR_AGENT_API_DATABASE_URL": "postgres://me:hunter2@127.0.0.1/app"}
    proc = _command(command, [], env)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("Error: CURSOR_AGENT_API_DATABASE_URL postgres://me:***@")
    assert "use postgresql+asyncpg://" in line and "hunter2" not in line



# review 44 had refused the TLS file parameters (the store's driver was handed them as arguments
# it has none of: a TypeError traceback); every driver now reads libpq's parameters from the
# URL itself, as libpq does, and so does any other one (application_name=, sslpassword=: a
# traceback before)
@pytest.mark.parametrize("query", [
    "sslmode=verify-full&sslrootcert=/ca.pem", "application_name=chats", "sslpassword=x",
    "ssl=require&sslmode=require", "target_session_attrs=read-write",
    "prepared_statement_cache_size=0",  # SQLAlchemy's own (behind PgBouncer): still its own
])
def test_libpq_parameters_in_the_url_are_taken(query: str) -> None:
    assert database_url_problem(f"postgresql+asyncpg://me:hunter2@127.0.0.1:54329/app?{query}") is None


# review 51: the one libpq URL every connection is given keeps SQLAlchemy's reading of the URL,
# and libpq (psycopg, the job queue) reads each part as written: a space was rendered raw (libpq
# refused the URL, and psycopg's logged message quoted the password) or as '+' in the query
# (libpq keeps '+': `options=-c+search_path=…`)
@pytest.mark.parametrize(("url", "read"), [
    ("postgresql+asyncpg://me:hunter2%20top%2Bsecret@127.0.0.1:54329/my%20db",
     {"user": "me", "password": "hunter2 top+secret", "dbname": "my db", "host": "127.0.0.1",
      "port": "54329"}),
    ("postgresql+asyncpg://u%40x:p%3Aw%2Fd@db/app?options=-c%20search_path%3Dcaa"
     "&application_name=my%20app",
     {"user": "u@x", "password": "p:w/d", "dbname": "app", "host": "db",
      "options": "-c search_path=caa", "application_name": "my app"}),
    ("postgresql+asyncpg://u@localhost:1/app?host=/run/pg&port=5433",
     {"user": "u", "dbname": "app", "host": "/run/pg", "port": "5433"}),
    ("postgresql+asyncpg://u@/app?host=a:1&host=b:2",
     {"user": "u", "dbname": "app", "host": "a,b", "port": "1,2"}),
    ("postgresql+asyncpg://u@[::1]:5432/no?database=app&ssl=require",
     {"user": "u", "dbname": "app", "host": "::1", "port": "5432", "sslmode": "require"}),
    ("postgresql+asyncpg:///app", {"dbname": "app"}),  # (the rest from PG* variables)
])
def test_libpq_reads_the_url_as_sqlalchemy_does(url: str, read: dict[str, str]) -> None:
    from psycopg.conninfo import conninfo_to_dict

    assert conninfo_to_dict(libpq_url(url)) == read


@pytest.mark.parametrize(("query", "said"), [
    ("command_timeout=30", "command_timeout= in the URL is not used: every statement waits "
                           "store_statement_timeout (60 s by default) instead; drop it"),
    ("timeout=5", "timeout= in the URL is not used: every connection waits "
                  "store_connect_timeout (10 s by default) instead; drop it"),
    ("keepalives=1", "keepalives= in the URL is not used: it is not a connection parameter both "
                     "drivers read (asyncpg's and libpq's; docs/distributed.md); drop it"),
    ("sslmode=require&channel_binding=require",  # Neon's connection string
     "channel_binding= in the URL is not used: set PGCHANNELBINDING in the environment instead"),
    ("application_name=a&application_name=b", "application_name= is given 2 times in the URL: "
                                              "keep one"),
    ("prepared_statement_cache_size=%C2%B2", "prepared_statement_cache_size= takes a whole number"),
])
def test_what_a_driver_would_not_take_is_refused(query: str, said: str) -> None:
    problem = database_url_problem(f"postgresql+asyncpg://me:hunter2@db/app?{query}")
    assert problem is not None and said in problem and "hunter2" not in problem


# review 52: asyncpg's own reading of the one libpq URL (its private parser: what the store and
# the LISTEN connections open) against SQLAlchemy's reading handed to asyncpg.connect() (what the
# store opened before it was given a DSN), with libpq's (the job queue's) beside them
_PG_ENV = {"PGHOST": "/tmp/pg-sock", "PGPORT": "54329", "PGUSER": "me", "PGDATABASE": "appdb",
           "PGPASSWORD": "pw"}
_ARGS = dict.fromkeys(("host", "port", "user", "password", "passfile", "database", "ssl",
                       "direct_tls", "server_settings", "target_session_attrs", "krbsrvname",
                       "gsslib", "service", "servicefile"))


def _asyncpg_reads(**given: object) -> tuple[list[object], str]:
    from asyncpg import connect_utils

    addrs, params = connect_utils._parse_connect_dsn_and_args(**{**_ARGS, "dsn": None, **given})[:2]
    return list(addrs), params.database


def _as_sqlalchemy_handed_it(url: str) -> tuple[list[object], str]:
    from sqlalchemy.dialects.postgresql.asyncpg import PGDialect_asyncpg
    from sqlalchemy.engine import make_url

    return _asyncpg_reads(**PGDialect_asyncpg().create_connect_args(make_url(url))[1])


@pytest.mark.parametrize("url", [
    "postgresql+asyncpg://", "postgresql+asyncpg:///", "postgresql+asyncpg://me:pw@127.0.0.1:54329",
    "postgresql+asyncpg://me:pw@/?host=/tmp/pg-sock", "postgresql+asyncpg://me:pw@/appdb?port=54329",
    "postgresql+asyncpg://me:pw@:54329/appdb", "postgresql+asyncpg://me:pw@[::1]:1/app",
    # (these two named the host '[::1]' and '[::1]:1' before, which no resolver knows)
    "postgresql+asyncpg://me:pw@/app?host=[::1]&port=1", "postgresql+asyncpg://me:pw@/app?host=[::1]:1",
])
def test_every_driver_opens_what_the_store_opened(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A URL without a database read PGDATABASE (a path of '/' made asyncpg open the user's
    database, the job queue PGDATABASE's), a port without a host kept it, IPv6 hosts in ?host=
    are hosts (not '[[::1]]', whose libpq error quoted the password)."""
    from psycopg.conninfo import conninfo_to_dict

    for name, value in _PG_ENV.items():
        monkeypatch.setenv(name, value)
    assert database_url_problem(url) is None
    dsn = libpq_url(url)
    before = ([("::1", 1)], "app") if "?host=[" in url else _as_sqlalchemy_handed_it(url)
    assert _asyncpg_reads(dsn=dsn) == before, dsn
    libpq = conninfo_to_dict(dsn)
    if "/app" not in url:
        assert "dbname" not in libpq or libpq["dbname"] == "appdb", dsn


@pytest.mark.parametrize("url", [
    "postgresql+asyncpg://me:ab%00hunter2@db/app",  # libpq's message quoted the password
    "postgresql+asyncpg://me:hunter2@/app?host=a:1&host=b",  # SQLAlchemy's ArgumentError
])
def test_a_url_libpq_cannot_read_is_one_line_without_its_secret(url: str) -> None:
    problem = database_url_problem(url)
    assert problem is not None and "hunter2" not in problem and "\n" not in problem
    assert "***" in problem or "?…" in problem
