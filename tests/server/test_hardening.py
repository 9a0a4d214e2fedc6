"""Small hardening of the server: its 500s carry the security headers, its SQLite file is
private, and its default database lives in the tool's home (``$CURSOR_AGENT_API_HOME``)."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from cursor_agent_api.server import ServerSettings, create_app
from cursor_agent_api.server.security import CONTENT_SECURITY_POLICY
from cursor_agent_api.server.settings import default_database_url
from cursor_agent_api.server.store import Store


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The usual umask, so that 'created with the umask's mode' would show as 0644/0755."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_an_unexpected_error_answers_500_with_the_security_headers(tmp_path: Path) -> None:
    app = create_app(ServerSettings(token="t" * 32, database_url=f"sqlite+aiosqlite:///{tmp_path}/db"))

    async def boom() -> None:
        raise RuntimeError("a bug")

    app.add_api_route("/boom", boom)
    app.router.routes.insert(0, app.router.routes.pop())  # before the web UI's mount at /

    async def get() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
            return await client.get("/boom")

    response = asyncio.run(get())
    assert response.status_code == 500
    # an ErrorBody like every other error answer (docs/server.md, "Error codes"), no traceback
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {
        "detail": "internal error: the server's log has the details", "code": "internal_error"}
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["referrer-policy"] == "no-referrer"


def test_the_web_ui_files_carry_the_security_headers_once_and_no_cache(tmp_path: Path) -> None:
    """The page's files get the headers every answer gets (one list, in ``checks.headers``),
    each once, and ``no-cache`` so that a new version is picked up at once."""
    from cursor_agent_api.server.checks.headers import SECURITY_HEADERS

    app = create_app(ServerSettings(token="t" * 32, database_url=f"sqlite+aiosqlite:///{tmp_path}/db"))

    async def get(path: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
            return await client.get(path)

    for path in ("/", "/index.html"):
        response = asyncio.run(get(path))
        assert response.status_code == 200, path
        names = [k.lower() for k, _ in response.headers.raw]
        for name, value in SECURITY_HEADERS:
            assert names.count(name) == 1, (path, name)
            assert response.headers[name.decode()] == value.decode()
        assert names.count(b"cache-control") == 1
        assert response.headers["cache-control"] == "no-cache"


def test_the_sqlite_file_and_its_new_directory_are_private(tmp_path: Path, umask_022: None) -> None:
    db = tmp_path / "data" / "cursor-agent-api" / "server.sqlite3"
    store = Store(f"sqlite+aiosqlite:///{db}")

    async def write_and_close() -> None:
        await store.start()
        async with store.transaction() as conn:  # WAL and shared-memory files appear on a write
            await conn.execute(sa.text("CREATE TABLE probe (x INTEGER)"))
        await store.close()

    asyncio.run(write_and_close())
    assert _mode(db) == 0o600
    assert _mode(db.parent) == 0o700
    for side in db.parent.iterdir():  # -wal, -shm: SQLite gives them the database file's mode
        assert _mode(side) == 0o600, side


def test_an_existing_directory_and_database_keep_their_modes(tmp_path: Path, umask_022: None) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o750)
    db = shared / "server.sqlite3"
    db.touch(mode=0o640)
    store = Store(f"sqlite+aiosqlite:///{db}")

    async def start_and_close() -> None:
        await store.start()
        await store.close()

    asyncio.run(start_and_close())
    assert (_mode(shared), _mode(db)) == (0o750, 0o640)  # the owner chose them


def test_the_default_database_lives_in_the_tools_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CURSOR_AGENT_API_HOME", str(tmp_path / "home"))
    assert default_database_url() == f"sqlite+aiosqlite:///{tmp_path / 'home' / 'server.sqlite3'}"
    assert ServerSettings(token="t" * 32).database_url == default_database_url()


def test_without_a_home_the_default_database_is_in_the_user_data_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cursor_agent_api.cli.saved_chats import SavedChats

    monkeypatch.delenv("CURSOR_AGENT_API_HOME", raising=False)
    home = SavedChats().root.parent  # where the command line keeps its saved chats
    assert default_database_url() == f"sqlite+aiosqlite:///{home / 'server.sqlite3'}"
