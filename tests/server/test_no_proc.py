"""Without ``/proc`` (macOS): a crashed server's runs are still recovered.

``/proc`` is made to find nothing (``runtime.groups`` reads it in one place), as on macOS.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from cursor_agent_api.runtime import groups
from cursor_agent_api.server.hub import Hub
from cursor_agent_api.server.log import EventLog
from cursor_agent_api.server.procs import identity_alive, server_identity
from cursor_agent_api.server.runs import RunManager, run_record
from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.store import Store


@pytest.fixture
def no_proc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(groups, "HAVE_PROC", False)
    monkeypatch.setattr(groups, "stat_fields", lambda pid: None)


def _dead_identity() -> str:
    """The identity of a server process that has exited, as recorded without /proc."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    host = server_identity().split(":")[0]
    return f"{host}:{int(proc.stdout)}:None"


def test_identity_without_a_start_time(no_proc: None) -> None:
    assert server_identity().endswith(":None")
    assert identity_alive(server_identity()) is True
    assert identity_alive(_dead_identity()) is False
    assert identity_alive(f"{server_identity().split(':')[0]}:1:x") is None


def test_a_dead_servers_run_is_recovered(no_proc: None, tmp_path: Path) -> None:
    async def main() -> None:
        url = f"sqlite+aiosqlite:///{tmp_path}/db.sqlite3"
        store = Store(url)
        await store.start()
        runs = RunManager(ServerSettings(token="t" * 16, database_url=url),
                          EventLog(store, Hub(), 65536))
        try:
            chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
            run, _ = await store.create_run(chat["id"], "hi", lambda r: run_record("queued", r),
                                            server_id=_dead_identity())
            assert await runs.recover() == [run["id"]]
            stored = await store.get_run(run["id"])
            assert stored is not None and stored["status"] == "interrupted"
        finally:
            await runs.shutdown()
            await store.close()
    asyncio.run(main())
