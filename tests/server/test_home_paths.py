"""The default database lives in the tool's home whatever its path holds: ``?``, ``#`` and
``%XX`` are part of a directory's name, not URL syntax."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from cursor_agent_api.server.settings import default_database_url, earlier_default_database
from cursor_agent_api.server.store import Store


@pytest.mark.parametrize("name", ["what?now", "a%41b", "a#b", "50% off", "Jos\u00e9"])
def test_the_database_is_in_the_home(name: str, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / name
    monkeypatch.setenv("CURSOR_AGENT_API_HOME", str(home))

    async def start() -> None:
        store = Store(default_database_url())
        await store.start()
        await store.close()

    asyncio.run(start())
    assert (home / "server.sqlite3").is_file()
    assert [p.name for p in tmp_path.iterdir()] == [name]  # nothing made beside it


def test_the_earlier_database_is_named_by_a_url_that_opens_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old_dir = tmp_path / "old?dir"
    old_dir.mkdir()
    (old_dir / "server.sqlite3").write_bytes(b"")
    monkeypatch.setattr("platformdirs.user_data_dir", lambda *a, **k: str(old_dir))
    monkeypatch.setenv("CURSOR_AGENT_API_HOME", str(tmp_path / "new?home"))
    said = earlier_default_database(default_database_url())
    assert said is not None
    assert f"{tmp_path}/new?home/server.sqlite3" in said  # the path, as it is
    assert f"--database-url sqlite+aiosqlite:///{tmp_path}/old%3Fdir/server.sqlite3" in said


def test_the_simulated_database_is_named_in_the_home_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``serve --simulate`` keeps its chats in ``server-simulated.sqlite3``: its name was made
    by replacing ``server.sqlite3`` anywhere in the URL, a directory of the home's path too."""
    home = tmp_path / "server.sqlite3" / "home"
    monkeypatch.setenv("CURSOR_AGENT_API_HOME", str(home))
    from cursor_agent_api.cli.serve import serve_database_url
    from cursor_agent_api.database_urls import sqlite_path

    assert sqlite_path(serve_database_url(simulate=True)) == str(home / "server-simulated.sqlite3")
    assert sqlite_path(serve_database_url(simulate=False)) == str(home / "server.sqlite3")
