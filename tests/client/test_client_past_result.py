"""An agent that writes past its result: the stream yields every event (sync and async
alike), the turn's outcome is the first result, and the fold stops there (docs/client.md)."""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Callable
from pathlib import Path

from cursor_agent_api import (
    AgentConfig,
    AgentResult,
    AsyncCursorAgentClient,
    CursorAgentClient,
    EventType,
)

LINES = [
    '{"type":"result","subtype":"success","result":"early","session_id":"s0"}',
    '{"type":"system","subtype":"init","session_id":"s1"}',
    '{"type":"assistant","message":{"content":[{"type":"text","text":"real"}]},"session_id":"s1"}',
    '{"type":"result","subtype":"error","is_error":true,"error":"boom","session_id":"s1"}',
]
TYPES = [EventType.RESULT_SUCCESS, EventType.SYSTEM_INIT, EventType.ASSISTANT,
         EventType.RESULT_ERROR]


def _agent(stand_in_agent: Callable[..., Path]) -> AgentConfig:
    script = stand_in_agent("printf '%s\\n' " + " ".join(shlex.quote(line) for line in LINES),
                            "two_results.sh")
    return AgentConfig(agent_binary=str(script))


def test_sync_and_async_streams_agree_past_the_result(
    stand_in_agent: Callable[..., Path],
) -> None:
    config = _agent(stand_in_agent)
    with CursorAgentClient(config) as client:
        stream = client.query_stream("hi")
        sync_events = list(stream)
        sync_result = stream.wait()
        assert stream.transcript.text == ""

    async def run() -> tuple[list[EventType], AgentResult]:
        async with AsyncCursorAgentClient(config) as client:
            astream = await client.query_stream("hi")
            events = [e.type async for e in astream]
            return events, await astream.wait()

    async_types, async_result = asyncio.run(run())
    assert [e.type for e in sync_events] == TYPES == async_types
    for r in (sync_result, async_result):
        assert r.success and r.result == "early" and r.text == ""
        assert [e.type for e in r.events] == TYPES
