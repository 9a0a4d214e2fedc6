"""One field name, one type, across the endpoints (review "contract", 2026-11-25, F7).

``truncated`` is everywhere a list of ``{"field": <JSON pointer>, "bytes": <whole size>}``
(records, ``GET …/tool-calls``, ACP requests), each field once: ``…/tool-calls`` listed
``/output`` twice (cut when stored, cut again when read), and a tool call's card (``view``,
in ``GET …/turns`` and the WebSocket's changes) had ``truncated: true`` beside ``cut``; it
now has ``cut`` alone (the names of its cut fields, empty when none). ``turn.result`` is the
result event's fields, without the ``"kind": "result_received"`` of the change it came from
(runs stored before read the same)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from inproc import InProcServer
from server_helpers import new_chat, wait_run
from sqlalchemy import update

from cursor_agent_api.server.models import runs
from cursor_agent_api.server.store import Store


def _ls_run(make_inproc: Callable[..., InProcServer], workspace: Path) -> tuple[httpx.Client, str, str]:
    """A server with max_field_bytes=300, a chat whose run lists 60 long file names (an ls
    whose output is cut), the client (to close), the chat's and the run's ids."""
    for i in range(60):
        (workspace / "project" / f"a-rather-long-file-name-number-{i:03d}.txt").write_text("x")
    server = make_inproc(max_field_bytes=300)
    c = server.client()
    chat = new_chat(c)
    run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "list the files"}).json()
    assert wait_run(c, run["id"])["status"] == "succeeded"
    return c, chat["id"], run["id"]


def test_truncated_is_one_list_of_each_cut_field_once(
    make_inproc: Callable[..., InProcServer], workspace: Path
) -> None:
    c, chat_id, _ = _ls_run(make_inproc, workspace)
    try:
        (call,) = c.get(f"/api/chats/{chat_id}/tool-calls").json()["tool_calls"]
        fields = [t["field"] for t in call["truncated"]]
        assert "/output" in fields and len(fields) == len(set(fields)), call["truncated"]
        whole = next(t["bytes"] for t in call["truncated"] if t["field"] == "/output")
        assert whole > 60 * len("a-rather-long-file-name-number-000.txt")
        turns = c.get(f"/api/chats/{chat_id}/turns").json()
        (view,) = [i["view"] for i in turns["runs"][0]["items"] if i["type"] == "tool_call"]
        assert "truncated" not in view and view["cut"] == ["output"]
    finally:
        c.close()


async def _result_as_stored_before(db_url: str, run_id: str, turn: dict[str, Any]) -> None:
    store = Store(db_url)
    await store.start()
    try:
        async with store.transaction() as conn:
            await conn.execute(update(runs).where(runs.c.id == run_id).values(turn=turn))
    finally:
        await store.close()


def test_a_turns_result_is_the_result_events_fields(
    make_inproc: Callable[..., InProcServer], workspace: Path, db_url: str
) -> None:
    c, chat_id, run_id = _ls_run(make_inproc, workspace)
    try:
        (entry,) = c.get(f"/api/chats/{chat_id}/turns").json()["runs"]
        result = entry["turn"]["result"]
        assert "kind" not in result and result["success"] is True
        assert isinstance(entry["turn"]["errors"], int)  # a count (docs/server.md)
        # a run stored by the earlier version, with the change's kind in it, reads the same
        old = {**entry["turn"], "result": {"kind": "result_received", **result}}
        asyncio.run(_result_as_stored_before(db_url, run_id, old))
        (again,) = c.get(f"/api/chats/{chat_id}/turns").json()["runs"]
        assert again["turn"] == entry["turn"]
    finally:
        c.close()
