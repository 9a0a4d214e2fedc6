"""A prompt on a chat whose active run was left by a dead server process reads that run
alone (review "scale", 2026-11-24): ``RunManager._recover_dead_owners_run`` listed every run
of the chat (``Store.list_runs``: prompts, results, turns) to find the one active run, on
each prompt the chat refused with "already has an active run". It now reads the chat's
active run (one row, from ``uq_runs_one_active_per_chat``). Counted through a spy on the
store: the run rows its methods hand back while the prompt is taken."""

from __future__ import annotations

import asyncio
import functools
import inspect
import socket
import subprocess
from collections.abc import Callable
from typing import Any

from inproc import InProcServer
from server_helpers import new_chat, wait_run
from sqlalchemy import text

from cursor_agent_api.server.store import Store

FINISHED = 300


def _dead_server_id() -> str:
    """A server identity of this host whose process is gone (reaped)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return f"{socket.gethostname()}:{proc.pid}:1"


async def _add_runs(db_url: str, chat_id: str) -> None:
    """FINISHED finished runs of the chat, then one left running by a dead server."""
    store = Store(db_url)
    await store.start()
    try:
        async with store.transaction() as conn:
            for i in range(FINISHED):
                await conn.execute(text(
                    "INSERT INTO runs (id, chat_id, prompt, status, created_ms, turn, num) "
                    "VALUES (:id, :chat, 'p', 'succeeded', :i, '{}', :num)"
                ), {"id": f"old-{i}", "chat": chat_id, "i": 10 + i, "num": 1_000_000 + i})
            await conn.execute(text(
                "INSERT INTO runs (id, chat_id, prompt, status, created_ms, server_id, num) "
                "VALUES ('left', :chat, 'p', 'running', :ms, :owner, 2000000)"
            ), {"chat": chat_id, "ms": 10 + FINISHED, "owner": _dead_server_id()})
    finally:
        await store.close()


def _run_rows(value: Any) -> int:
    """The run rows in what a store method answered (a row has a ``prompt``)."""
    if isinstance(value, dict):
        return 1 if "prompt" in value else 0
    if isinstance(value, (list, tuple)):
        return sum(_run_rows(v) for v in value)
    return 0


def _spy(store: Any) -> list[tuple[str, int]]:
    """Wrap each coroutine method of ``store`` (this instance): the calls, with the run rows
    each answered."""
    seen: list[tuple[str, int]] = []
    for name, method in inspect.getmembers(store, inspect.iscoroutinefunction):
        if name.startswith("_"):
            continue

        def wrap(method: Callable[..., Any], name: str) -> Callable[..., Any]:
            @functools.wraps(method)
            async def spied(*args: Any, **kwargs: Any) -> Any:
                answer = await method(*args, **kwargs)
                seen.append((name, _run_rows(answer)))
                return answer

            return spied

        setattr(store, name, wrap(method, name))
    return seen


def test_a_dead_owners_run_is_found_without_reading_the_chats_runs(
    make_inproc: Callable[..., InProcServer], db_url: str
) -> None:
    server = make_inproc()
    with server.client() as c:
        chat = new_chat(c)
        asyncio.run(_add_runs(db_url, chat["id"]))
        seen = _spy(server.store)
        r = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"})
        assert r.status_code == 202, r.text
        taken = list(seen)
        left = c.get("/api/runs/left").json()
        assert (left["status"], left["error_type"]) == ("interrupted", "ServerRestart")
        assert wait_run(c, r.json()["id"])["status"] == "succeeded"
    rows = sum(n for _, n in taken)
    assert rows <= 3, f"{rows} run rows read to take one prompt: {taken}"
