"""The server's SQLite file deleted, or full, while the server runs."""

from __future__ import annotations

import os
from pathlib import Path

from starlette.testclient import TestClient

from cursor_agent_api.server import ServerSettings, create_app

TOKEN = "t" * 16


def test_a_deleted_database_file_refuses_writes_and_says_what_to_do(tmp_path: Path) -> None:
    """Its writes would land in a file no restart finds. Before: health said "ok", writes
    answered 201, and a restart found none of them."""
    db = tmp_path / "server.sqlite3"
    settings = ServerSettings(token=TOKEN, database_url=f"sqlite+aiosqlite:///{db}",
                              roots=(tmp_path,), simulate=True)
    headers = {"Authorization": f"token {TOKEN}"}
    new_chat = {"workspace": str(tmp_path), "title": "t"}
    with TestClient(create_app(settings), base_url="http://127.0.0.1:8765", headers=headers) as c:
        assert c.post("/api/chats", json=new_chat).status_code == 201
        assert c.get("/api/health").json()["status"] == "ok"
        for name in (db.name, db.name + "-wal", db.name + "-shm"):
            os.remove(tmp_path / name)
        health = c.get("/api/health").json()
        assert health["status"] == "degraded"
        assert health["store"]["reason"].startswith("the database file was deleted or replaced")
        assert health["store"]["reason"].endswith(f"restart the server ({db})")
        r = c.post("/api/chats", json=new_chat)
        assert r.status_code == 503 and "restart the server" in r.json()["detail"]


def test_a_prompt_refused_by_a_full_sqlite_file_says_nothing_was_stored(tmp_path: Path) -> None:
    """SQLite rolls back a transaction whose statement or COMMIT fails: the 503 says nothing
    was changed. Before: "it may have been stored as run …" (as for a connection lost
    during a PostgreSQL COMMIT)."""
    from sqlalchemy import event

    db = tmp_path / "server.sqlite3"
    settings = ServerSettings(token=TOKEN, database_url=f"sqlite+aiosqlite:///{db}",
                              roots=(tmp_path,), simulate=True)
    app = create_app(settings)
    store = app.state.store

    async def fill_the_disk() -> None:
        """Every connection from now on may not grow the file: a full disk."""
        await store.engine.dispose()

        @event.listens_for(store.engine.sync_engine, "connect")
        def _full(dbapi_connection: object, _record: object) -> None:
            cur = dbapi_connection.cursor()  # type: ignore[attr-defined]
            cur.execute("PRAGMA page_count")
            (pages,) = cur.fetchone()
            cur.execute(f"PRAGMA max_page_count={pages}")
            cur.close()

    headers = {"Authorization": f"token {TOKEN}"}
    with TestClient(app, base_url="http://127.0.0.1:8765", headers=headers) as c:
        chat = c.post("/api/chats", json={"workspace": str(tmp_path), "title": "t"}).json()
        c.portal.call(fill_the_disk)  # type: ignore[union-attr]
        r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "x" * 150_000})
        assert r.status_code == 503 and "full" in r.json()["detail"], r.text
        assert "nothing was changed" in r.json()["detail"] and "may have been" not in r.text
        assert c.get(f"/api/chats/{chat['id']}/runs").json()["runs"] == []
