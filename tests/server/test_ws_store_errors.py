"""The database failing while a WebSocket replays: the client is told to reconnect (an
``error``, then close code 1013) instead of a dropped socket and a traceback in the log."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from inproc import InProcServer
from server_helpers import new_chat, wait_run

from cursor_agent_api.server.store import StoreUnavailableError


def test_a_read_that_fails_mid_replay_asks_the_client_to_reconnect(
    make_inproc: Callable[..., InProcServer], capfd: Any
) -> None:
    srv = make_inproc()
    with srv.client() as c:
        chat = new_chat(c)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": "hi"}).json()
        wait_run(c, run["id"])
    store = srv.store
    real = store.read_page
    calls = [0]

    async def failing_second_page(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 2:
            raise StoreUnavailableError("injected fault: read failed")
        kwargs["max_bytes"] = 1  # one record per page, so that there is a second page
        return await real(*args, **kwargs)

    store.read_page = failing_second_page

    async def follow() -> tuple[list[dict[str, Any]], int | None]:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed

        url = f"{srv.url.replace('http://', 'ws://')}/api/chats/{chat['id']}/stream?after_seq=0"
        got: list[dict[str, Any]] = []
        async with connect(url, additional_headers={"Authorization": f"token {srv.token}"}) as ws:
            try:
                while True:
                    got.append(json.loads(await asyncio.wait_for(ws.recv(), 30)))
            except ConnectionClosed:
                return got, ws.close_code

    try:
        got, code = asyncio.run(follow())
    finally:
        store.read_page = real
    logged = capfd.readouterr().err  # the in-process server logs on this process's stderr
    assert "Traceback" not in logged, logged[-2000:]
    assert code == 1013, (code, got)
    assert [m["op"] for m in got] == ["hello", "event", "error"], got
    assert got[-1]["seq"] == got[1]["seq"] == 1, got
    assert "after_seq=1" in got[-1]["detail"], got
