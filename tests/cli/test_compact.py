"""``cursor-agent-api compact``: after a chat is deleted the SQLite file keeps its size (its
pages are free inside it) until ``compact`` rewrites it; for PostgreSQL it says why nothing is
needed; a missing file or a bad URL is one line, not a traceback, and creates nothing."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from test_lazy_imports import _probe as probe

from cursor_agent_api.server.store import NewRecord, Store

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]


def _compact(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CURSOR_AGENT_API_")}
    return subprocess.run([*CLI, "compact", *args], capture_output=True, text=True, timeout=120,
                          env={**base, **(env or {})}, check=False)


async def _a_deleted_chat(url: str) -> None:
    """A chat with ~8 MB of records, deleted."""
    store = Store(url)
    await store.start()
    try:
        chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
        big = NewRecord("server", "note", None, {"text": "x" * 1_000_000})
        await store.append(chat["id"], [big] * 8)
        await store.delete_chat(chat["id"])
    finally:
        await store.close()


def test_compact_gives_a_deleted_chats_space_back(tmp_path: Path) -> None:
    path = tmp_path / "server.sqlite3"
    url = f"sqlite+aiosqlite:///{path}"
    asyncio.run(_a_deleted_chat(url))
    before = path.stat().st_size
    assert before > 8_000_000  # deleted, and the file as big as ever

    done = _compact(env={"CURSOR_AGENT_API_DATABASE_URL": url})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"compacted {path}: "), done.stdout
    assert path.stat().st_size < 1_000_000
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0


def test_compact_on_postgresql_explains_autovacuum() -> None:
    done = _compact("--database-url", "postgresql+asyncpg://u@127.0.0.1:1/none")
    assert done.returncode == 0, done.stderr
    assert "autovacuum" in done.stdout and "VACUUM FULL" in done.stdout


def test_compact_of_a_missing_file_says_so_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "nothing.sqlite3"
    done = _compact("--database-url", f"sqlite+aiosqlite:///{path}")
    assert done.returncode == 1
    assert done.stderr.strip() == f"Error: no database file {path}", done.stderr
    assert not path.exists()
    done = _compact("--database-url", "postgres://u@h/d")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "postgresql+asyncpg://" in done.stderr


def test_compact_simulate_takes_serve_simulates_database(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    path = home / "server-simulated.sqlite3"  # serve --simulate's database (cli/serve.py)
    asyncio.run(_a_deleted_chat(f"sqlite+aiosqlite:///{path}"))
    (home / "server.sqlite3").write_bytes(b"")  # serve's own database: left alone

    done = _compact("--simulate", env={"CURSOR_AGENT_API_HOME": str(home)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"compacted {path}: "), done.stdout
    assert path.stat().st_size < 1_000_000
    other = tmp_path / "given.sqlite3"  # as for serve: a given URL wins over --simulate's default
    asyncio.run(_a_deleted_chat(f"sqlite+aiosqlite:///{other}"))
    done = _compact("--simulate", "--database-url", f"sqlite+aiosqlite:///{other}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"compacted {other}: "), done.stdout


def _server_modules_after(tmp_path: Path, *args: str, env: dict[str, str]) -> tuple[list[str], object]:
    """``compact ARGS`` run in a fresh Python: the server's modules (and FastAPI's) it loaded,
    and its exit code."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("CURSOR_AGENT_API_")}
    modules, code, _ = probe(tmp_path, {**base, **env}, "compact", *args)
    heavy = [m for m in sorted(modules)
             if m.split(".")[:2] == ["cursor_agent_api", "server"] or m.split(".")[0] == "fastapi"]
    return heavy, code


def test_compact_refuses_a_missing_file_before_importing_the_server(tmp_path: Path) -> None:
    """The server's modules (a second to import) were loaded before a missing file was told;
    now the file is looked for first: the one line, exit 1, nothing of the server. The same
    for the default file (``--simulate``'s here) and for PostgreSQL's note."""
    home = tmp_path / "home"
    missing = f"sqlite+aiosqlite:///{tmp_path / 'nothing.sqlite3'}"
    assert _server_modules_after(tmp_path, "--database-url", missing, env={}) == ([], 1)
    assert _server_modules_after(tmp_path, "--simulate",
                                 env={"CURSOR_AGENT_API_HOME": str(home)}) == ([], 1)
    assert not home.exists()
    assert _server_modules_after(tmp_path, "--database-url",
                                 "postgresql+asyncpg://u@127.0.0.1:1/none", env={}) == ([], 0)
