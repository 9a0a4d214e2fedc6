"""The migrations at start-up: all of them or none, one process at a time.

A database at migration 0004 (as a server of 11-22 left it) is upgraded by today's start
(0005 adds run columns, 0006 rebuilds the log). A failure, a kill or a second process
starting at the same moment must never leave it half upgraded (SQLite ran each ``ALTER``
outside any transaction: 0005's columns stayed, the version did not move, and every later
start failed on "duplicate column name"). SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, inspect, text
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import create_async_engine

from cursor_agent_api.server.store import MIGRATIONS_DIR, Store

HEAD = sorted(p.stem for p in (MIGRATIONS_DIR / "versions").glob("[0-9]*.py"))[-1].split("_")[0]
"""The last migration's revision (what a start upgrades to)."""
COPY = "INSERT INTO events_compact"
"""The first statement of migration 0006 (its copy of the log), after 0005 ran."""


def _alembic_config(sync_conn: Any) -> Any:
    """Alembic's configuration for the project's migrations, on ``sync_conn``."""
    from alembic.config import Config

    from cursor_agent_api.server.store import MIGRATIONS_DIR

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["connection"] = sync_conn
    return cfg


def at_0004(db_url: str) -> None:
    """The database migrated to 0004, with a chat and a run in it."""
    from alembic import command


    def upgrade(sync_conn: Any) -> None:
        command.upgrade(_alembic_config(sync_conn), "0004")

    async def main() -> None:
        engine = create_async_engine(db_url)
        async with engine.begin() as conn:
            await conn.run_sync(upgrade)
            await conn.execute(text(
                "INSERT INTO chats (id, workspace, options, title, created_ms, updated_ms, last_seq) "
                "VALUES ('c1', '/w', '{}', 'old', 0, 0, 0)"))
            await conn.execute(text(
                "INSERT INTO runs (id, chat_id, prompt, status, created_ms) "
                "VALUES ('r1', 'c1', 'hi', 'succeeded', 0)"))
        await engine.dispose()

    asyncio.run(main())


def schema_state(db_url: str) -> tuple[str, bool, bool]:
    """The version, whether ``runs.job_id`` (0005) and ``chats.num`` (0006) exist."""

    def columns(sync_conn: Any, table: str) -> set[str]:
        return {c["name"] for c in inspect(sync_conn).get_columns(table)}

    async def main() -> tuple[str, bool, bool]:
        engine = create_async_engine(db_url)
        async with engine.connect() as conn:
            version = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar()
            runs = await conn.run_sync(columns, "runs")
            chats = await conn.run_sync(columns, "chats")
        await engine.dispose()
        return str(version), "job_id" in runs, "num" in chats

    return asyncio.run(main())


def run_indexes(db_url: str) -> dict[str, list[str]]:
    """The indexes of ``runs`` (not the unique ones): their names and columns."""

    def indexes(sync_conn: Any) -> dict[str, list[str]]:
        return {i["name"]: list(i["column_names"]) for i in inspect(sync_conn).get_indexes("runs")
                if not i.get("unique")}

    async def main() -> dict[str, list[str]]:
        engine = create_async_engine(db_url)
        async with engine.connect() as conn:
            found: dict[str, list[str]] = await conn.run_sync(indexes)
        await engine.dispose()
        return found

    return asyncio.run(main())


def index_names(db_url: str, table: str) -> set[str]:
    """The names of ``table``'s indexes, expression indexes too (which SQLAlchemy's reflection
    skips on SQLite)."""

    async def main() -> set[str]:
        engine = create_async_engine(db_url)
        async with engine.connect() as conn:
            q = ("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = :t"
                 if engine.dialect.name == "sqlite"
                 else "SELECT indexname FROM pg_indexes WHERE tablename = :t")
            names = {str(r[0]) for r in await conn.execute(text(q), {"t": table})}
        await engine.dispose()
        return names

    return asyncio.run(main())


def start_and_read(db_url: str) -> str | None:
    """Start a store (it migrates), read the old run's prompt, close."""

    async def main() -> str | None:
        store = Store(db_url)
        try:
            await store.start()
            run = await store.get_run("r1")
            return None if run is None else str(run["prompt"])
        finally:
            await store.close()

    return asyncio.run(main())


@pytest.fixture
def statement_hook() -> Iterator[list[Any]]:
    """Hooks called before every statement of every engine (``hook(statement)``)."""
    hooks: list[Any] = []

    def before(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        for hook in hooks:
            hook(statement)

    event.listen(Engine, "before_cursor_execute", before)
    try:
        yield hooks
    finally:
        event.remove(Engine, "before_cursor_execute", before)


def test_a_failed_migration_changes_nothing_and_says_what_failed(
    db_url: str, statement_hook: list[Any]
) -> None:
    """A failure in 0006 (a full disk) undoes 0005 too: the database is at 0004 as it was,
    the error names the migration and the database's message; the next start upgrades it."""
    at_0004(db_url)

    def disk_full(statement: str) -> None:
        if statement.lstrip().startswith(COPY):
            raise OSError("database or disk is full (injected)")

    statement_hook.append(disk_full)
    with pytest.raises(Exception) as caught:
        start_and_read(db_url)
    message = str(caught.value)
    assert "0006_compact_events" in message and "database or disk is full (injected)" in message
    assert schema_state(db_url) == ("0004", False, False)
    statement_hook.clear()
    assert start_and_read(db_url) == "hi"
    assert schema_state(db_url) == (HEAD, True, True)


KILLED = r"""
import asyncio, os, sys
from sqlalchemy import event
from sqlalchemy.engine import Engine
from cursor_agent_api.server.store import Store

@event.listens_for(Engine, "before_cursor_execute")
def die(conn, cursor, statement, *a):
    if statement.lstrip().startswith("INSERT INTO events_compact"):
        os._exit(137)  # the process dies here, as under SIGKILL or a power cut

asyncio.run(Store(sys.argv[1]).start())
"""


def test_a_server_killed_while_it_migrates_leaves_the_old_database(db_url: str) -> None:
    """A process killed in the middle of the migrations (no rollback of its own): the
    database is at 0004 as it was, and the next start upgrades it."""
    at_0004(db_url)
    done = subprocess.run([sys.executable, "-c", KILLED, db_url], capture_output=True, text=True, timeout=120)
    assert done.returncode == 137, done.stderr
    assert schema_state(db_url) == ("0004", False, False)
    assert start_and_read(db_url) == "hi"
    assert schema_state(db_url) == (HEAD, True, True)


STARTER = r"""
import asyncio, sys
from sqlalchemy import event
from sqlalchemy.engine import Engine
from cursor_agent_api.server.store import Store

role = sys.argv[2]

@event.listens_for(Engine, "before_cursor_execute")
def hook(conn, cursor, statement, *a):
    if role == "a" and statement.lstrip().startswith("INSERT INTO events_compact"):
        print("paused", flush=True)
        sys.stdin.readline()  # until the test lets it go on
    # B about to wait for the migrations' lock (SQLite's write lock, PostgreSQL's advisory lock)
    if role == "b" and ("BEGIN IMMEDIATE" in statement or "pg_advisory_xact_lock" in statement):
        print("waits", flush=True)

async def main():
    store = Store(sys.argv[1])
    try:
        await store.start()
        print("ok", (await store.get_run("r1"))["prompt"], flush=True)
    finally:
        await store.close()

asyncio.run(main())
"""


def test_two_starts_at_once_one_migrates_and_the_other_waits(db_url: str) -> None:
    """Process A is in the middle of the migrations when B starts: B waits for A's lock,
    then finds the schema up to date (before, on SQLite, B saw 0005's columns without the
    version and failed on "duplicate column name")."""
    at_0004(db_url)

    def start(role: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", STARTER, db_url, role],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )

    a = start("a")
    assert a.stdout is not None and a.stdin is not None
    b: subprocess.Popen[str] | None = None
    try:
        assert a.stdout.readline() == "paused\n", a.stderr
        b = start("b")
        assert b.stdout is not None
        b_first = b.stdout.readline()  # "waits", or its end (it did not wait)
        a.stdin.write("go on\n")
        a.stdin.flush()
        a_out, a_err = a.communicate(timeout=120)
        b_out, b_err = b.communicate(timeout=120)
    finally:
        for proc in (a, b):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    assert (b_first + b_out).splitlines() == ["waits", "ok hi"], b_err[-2000:]
    assert a_out.splitlines() == ["ok hi"], a_err[-2000:]
    assert schema_state(db_url) == (HEAD, True, True)


def test_a_downgrade_is_refused_and_changes_nothing(db_url: str) -> None:
    """Downgrades are not supported (older versions would find tool call outputs and agent
    records' fields missing): Alembic's downgrade below 0006 stops with a message that says
    so and what to do, and the database keeps its schema and rows."""
    from alembic import command


    at_0004(db_url)
    assert start_and_read(db_url) == "hi"

    def downgrade(sync_conn: Any) -> None:
        command.downgrade(_alembic_config(sync_conn), "0005")

    async def main() -> None:
        engine = create_async_engine(db_url)
        try:
            async with engine.begin() as conn:
                await conn.run_sync(downgrade)
        finally:
            await engine.dispose()

    with pytest.raises(RuntimeError, match="not supported") as caught:
        asyncio.run(main())
    assert "Restore the copy of the database made before the upgrade" in str(caught.value)
    assert schema_state(db_url) == (HEAD, True, True)
    assert run_indexes(db_url) == ORDERED
    assert start_and_read(db_url) == "hi"


ORDERED = {"ix_runs_chat_order": ["chat_id", "created_ms", "id"], "ix_runs_status": ["status"]}
"""The indexes of ``runs`` since 0007 (besides the unique ones): a chat's runs in their order,
which replaces the index of ``chat_id`` alone (tests/server/test_run_index.py)."""


def test_an_upgrade_indexes_a_chats_runs_and_tool_calls_in_their_order(db_url: str) -> None:
    """Migrations 0007, 0008 and 0010 on a database with runs: ``ix_runs_chat_order`` replaces
    ``ix_runs_chat_id``, ``ix_tool_calls_chat_order`` (its second column an expression:
    the call's place) ``ix_tool_calls_chat_id``; the runs read as before
    (tests/server/test_run_index.py: the pages' plans use them)."""
    at_0004(db_url)
    assert run_indexes(db_url) == {"ix_runs_chat_id": ["chat_id"], "ix_runs_status": ["status"]}
    assert "ix_tool_calls_chat_id" in index_names(db_url, "tool_calls")
    assert start_and_read(db_url) == "hi"
    assert schema_state(db_url) == (HEAD, True, True)
    assert run_indexes(db_url) == ORDERED
    names = index_names(db_url, "tool_calls")
    assert "ix_tool_calls_chat_order" in names and "ix_tool_calls_chat_id" not in names
    assert "ix_chats_recent" in index_names(db_url, "chats")  # 0010: GET /api/chats's order


def test_an_upgrade_keeps_the_tool_calls_an_earlier_version_cut(db_url: str) -> None:
    """Migration 0009 gives ``tool_calls`` its own ``cuts`` column (what the server cut,
    which the earlier versions wrote under the result's ``"_cut"`` key); an old row keeps
    its result, ``cuts`` NULL, and reads as the earlier version meant it."""
    from cursor_agent_api.server.webui import stored_cuts

    at_0004(db_url)
    cut = [{"field": "/result/success/content", "bytes": 5000}]
    old = {"success": {"content": "x"}, "_cut": cut}

    async def add_row() -> None:
        engine = create_async_engine(db_url)
        async with engine.begin() as conn:
            await conn.execute(text(
                "INSERT INTO tool_calls (chat_id, run_id, call_id, kind, name, status, args, result,"
                " output, idx) VALUES ('c1', 'r1', 't1', 'read', 'readToolCall', 'succeeded', '{}',"
                " :result, '', 0)"), {"result": json.dumps(old)})
        await engine.dispose()

    async def read_row() -> dict[str, Any]:
        store = Store(db_url)
        try:
            await store.start()
            row = await store.get_tool_call("r1", 0)
            assert row is not None
            return row
        finally:
            await store.close()

    asyncio.run(add_row())
    row = asyncio.run(read_row())
    assert schema_state(db_url)[0] == HEAD and row["cuts"] is None and row["result"] == old
    assert stored_cuts(row) == ({"success": {"content": "x"}}, cut)


def test_the_migrations_keep_their_own_sql() -> None:
    """A migration is history: it must not import the application's code, which a later
    change would change under it (the trigger's SQL, a record's classification). Only
    Procrastinate's schema is applied as the installed Procrastinate ships it."""
    import ast

    from cursor_agent_api.server.store import MIGRATIONS_DIR

    imported = set()
    for path in sorted((MIGRATIONS_DIR / "versions").glob("[0-9]*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cursor_agent_api"):
                imported |= {(path.stem, node.module, alias.name) for alias in node.names}
    assert imported == {
        ("0005_distributed", "cursor_agent_api.server.store.queue_schema", "apply_queue_schema")
    }


def test_the_database_of_a_version_before_the_home_moved_is_named_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``CURSOR_AGENT_API_HOME`` set, the default database is in it (since 11-23); an
    earlier version's is in the per-user data directory. ``serve`` says so in one line, with
    how to use it, when the new one does not exist yet; it moves nothing."""
    import socket

    data = tmp_path / "data"
    old = data / "cursor-agent-api" / "server-simulated.sqlite3"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"")
    env = {**os.environ, "CURSOR_AGENT_API_HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(data)}
    env.pop("CURSOR_AGENT_API_DATABASE_URL", None)
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    serve = [str(Path(sys.executable).parent / "cursor-agent-api"), "serve", "--simulate",
             "--port", str(busy.getsockname()[1])]
    try:  # it stops at the busy port, after what it says of the database
        first = subprocess.run(serve, env=env, capture_output=True, text=True, timeout=120)
    finally:
        busy.close()
    warnings = [line for line in first.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and f"--database-url sqlite+aiosqlite:///{old}" in warnings[0], first.stderr
    assert "cannot listen" in first.stderr and old.is_file()
    # once the new database exists, nothing is said
    from cursor_agent_api.server.settings import earlier_default_database

    new = tmp_path / "home" / old.name
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    assert earlier_default_database(f"sqlite+aiosqlite:///{new}") is not None
    new.parent.mkdir()
    new.write_bytes(b"")
    assert earlier_default_database(f"sqlite+aiosqlite:///{new}") is None


def test_a_start_with_nothing_to_migrate_takes_no_write_lock(tmp_path: Path) -> None:
    """Another process holds SQLite's write lock while a server starts on a database that is
    up to date: the start reads the schema's version and goes on (the writes wait later, and
    a dead server's runs are marked in the background: recovery.py); before, every start took
    the write lock first and exited 'database is locked' after the busy timeout (review of
    the merge of the start-up and migration changes)."""
    import sqlite3

    path = tmp_path / "server.sqlite3"
    url = f"sqlite+aiosqlite:///{path}"

    async def start(busy_timeout: float) -> None:
        store = Store(url, busy_timeout=busy_timeout)
        await store.start()
        await store.close()

    asyncio.run(start(30.0))  # created and migrated
    locker = sqlite3.connect(path, isolation_level=None)
    try:
        locker.execute("BEGIN IMMEDIATE")
        asyncio.run(start(0.5))  # up to date: no write lock needed
    finally:
        locker.close()
