"""A server's look for the runs of dead servers of its host (``dispatch/dead_owners.py``)
leaves alone the runs of a live server of another PID namespace with the same host name (two
containers on the host's network): looked up in this namespace, its pid names another process,
and the run was taken for a dead server's (review of 2026-11-25, "self2"). Its identity now
carries its namespace, and the look acts only on identities of its own."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cursor_agent_api.server.hub import Hub
from cursor_agent_api.server.log import EventLog
from cursor_agent_api.server.runs import RunManager, run_record
from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.store import Store

IDENTITY = "from cursor_agent_api.server.procs import server_identity; print(server_identity(), flush=True)"
OWNER = f"{IDENTITY}\nimport sys; sys.stdin.read()"  # a server stand-in: alive until stdin closes


def _unshare() -> list[str]:
    """``unshare`` that starts a process in a PID namespace of its own, or a skip."""
    argv = ["unshare", "--pid", "--fork", "--mount-proc"]
    if shutil.which("unshare") is None or subprocess.run(
            [*argv, "true"], capture_output=True, check=False).returncode != 0:
        pytest.skip("no PID namespaces here (unshare missing or not permitted)")
    return argv


async def _owned_run_ended(url: str, owner: str) -> tuple[list[str], str]:
    store = Store(url)
    await store.start()
    try:
        runs = RunManager(ServerSettings(token="t" * 16, database_url=url), EventLog(store, Hub(), 65536))
        chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
        run, _ = await store.create_run(chat["id"], "hi", lambda r: run_record("queued", r), server_id=owner)
        ended = await runs.end_dead_owners_runs()
        stored = await store.get_run(run["id"])
        assert stored is not None
        return ended, str(stored["status"])
    finally:
        await store.close()


def test_a_live_server_of_another_pid_namespace_keeps_its_runs(tmp_path: Path) -> None:
    with subprocess.Popen([*_unshare(), sys.executable, "-c", OWNER], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as owner:
        try:
            assert owner.stdout is not None
            identity = owner.stdout.readline().strip()
            ended, status = asyncio.run(_owned_run_ended(f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite3'}",
                                                         identity))
        finally:
            assert owner.stdin is not None
            owner.stdin.close()
    assert (ended, status) == ([], "queued"), identity
