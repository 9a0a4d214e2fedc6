"""A turn cancelled while its agent ignores ``session/cancel`` (audit 17, finding 2): cancel's
fallback stops the process ``kill_grace`` later, so the next turn — a new session too — must
not be given to it: it starts on a new ``agent acp`` and succeeds. A process the client stops
itself is never said to be a broken binary.

The fake agent ignores ``session/cancel`` (``FAKE_ACP_NO_CANCEL=1``): it does not depend on the
simulator."""

from __future__ import annotations

import asyncio
import gc
import sys
from typing import Any

import pytest
from acp_fake import FakeAgent

from cursor_agent_api import AsyncCursorAgentClient, CursorAgentClient, EventType
from cursor_agent_api.runtime.acp_connection import AcpConnection

# long enough that the next query reaches the process before cancel's fallback stops it
_GRACE = 5.0


def _pids(client: Any) -> list[int | None]:
    return [t.pid for t in client._acp.transports.values() if not t.closed]


@pytest.mark.parametrize("how", ["cancel", "drop"])
def test_the_next_query_after_an_ignored_cancel_starts_a_new_process(
        fake: FakeAgent, how: str) -> None:
    config = fake.config(env={"FAKE_ACP_NO_CANCEL": "1"}, kill_grace=_GRACE, timeout=120.0)
    with CursorAgentClient(config) as client:
        assert client.query("say hello").success
        (pid,) = _pids(client)
        stream = client.query_stream("slow")
        for event in stream:
            if event.type is EventType.ASSISTANT_DELTA:
                break
        if how == "cancel":
            stream.cancel()
        else:
            del stream, event
            gc.collect()
        after = client.query("say again")
        (new_pid,) = _pids(client)
    assert after.success, after.error
    assert new_pid != pid


def test_the_async_next_query_after_an_ignored_cancel_starts_a_new_process(
        fake: FakeAgent) -> None:
    config = fake.config(env={"FAKE_ACP_NO_CANCEL": "1"}, kill_grace=_GRACE, timeout=120.0)

    async def main() -> tuple[Any, Any, int | None, int | None]:
        async with AsyncCursorAgentClient(config) as client:
            await client.query("say hello")
            (pid,) = _pids(client)
            stream = client.query_stream("slow")
            async for event in stream:
                if event.type is EventType.ASSISTANT_DELTA:
                    break
            stream.cancel()
            after = await client.query("say again")
            (new_pid,) = _pids(client)  # the process the next query ran on
            cancelled = await stream.wait()
            return cancelled, after, pid, new_pid

    cancelled, after, pid, new_pid = asyncio.run(main())
    assert cancelled.cancelled
    assert after.success, after.error
    assert new_pid != pid


def test_a_process_the_client_stops_is_not_called_a_broken_binary() -> None:
    async def main() -> BaseException:
        conn = AcpConnection([sys.executable, "-c", "import time; time.sleep(60)"], env=None,
                             kill_grace=5.0)
        await conn.start()
        pending = asyncio.ensure_future(conn.request("session/new", {}))
        await asyncio.sleep(0)
        await conn.close()
        try:
            await pending
        except BaseException as exc:
            return exc
        raise AssertionError("answered")

    error: Any = asyncio.run(main())
    assert "stopped by the client" in str(error), error
    assert error.remedy == "send the prompt again" and "check that" not in str(error)
