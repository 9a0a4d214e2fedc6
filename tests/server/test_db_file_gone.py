"""The SQLite file deleted while the server runs: its writes would land in a file no restart
finds. Before: health said "ok", writes answered 201, and a restart found none of them."""

from __future__ import annotations

import os
from pathlib import Path

from starlette.testclient import TestClient

from cursor_agent_api.server import ServerSettings, create_app

TOKEN = "t" * 16


def test_a_deleted_database_file_refuses_writes_and_says_what_to_do(tmp_path: Path) -> None:
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
