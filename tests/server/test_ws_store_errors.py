"""The database failing while a WebSocket replays: the client is told to reconnect (an
``error``, then close code 1013) instead of a dropped socket and a traceback in the log."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from inproc import InProcServer
from server_helpers import new_chat, wait_run, ws_until_closed

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

    try:
        got, code = asyncio.run(ws_until_closed(srv.url, chat['id'], srv.token))
    finally:
        store.read_page = real
    logged = capfd.readouterr().err  # the in-process server logs on this process's stderr
    assert "Traceback" not in logged, logged[-2000:]
    assert code == 1013, (code, got)
    assert [m["op"] for m in got] == ["hello", "event", "error"], got
    assert got[-1]["seq"] == got[1]["seq"] == 1, got
    assert "after_seq=1" in got[-1]["detail"], got
