"""A cancelled turn's exception is a :class:`TurnCancelledError` (review of a bot, F3).

A bot's ``/stop`` and an unknown failure were both a bare ``CursorAgentError``: ``except``
could not tell them apart. Now a turn cancelled on request has a ``TurnCancelledError``
(a ``CursorAgentError``: ``except CursorAgentError`` still catches it), in print mode here;
ACP mode in tests/acp_mode/test_acp_client.py.
"""

from __future__ import annotations

import asyncio

import pytest

from cursor_agent_api import (
    AgentConfig,
    AsyncCursorAgentClient,
    CursorAgentClient,
    CursorAgentError,
    TurnCancelledError,
)
from cursor_agent_api.testing import Script, ScriptTransport

INIT = {"type": "system", "subtype": "init", "session_id": "8b72ae6d-ab42-4854-991e-6ecf580e66c2"}


def hanging() -> AgentConfig:
    return AgentConfig(transport=ScriptTransport(Script([INIT], hang=True)))


def test_a_cancelled_stream_has_a_turn_cancelled_error() -> None:
    with CursorAgentClient(hanging()) as client:
        with client.query_stream("go") as stream:
            for _ in stream:
                stream.cancel()  # a bot's /stop
        result = stream.wait()
    assert result.cancelled and isinstance(result.exception, TurnCancelledError)
    with pytest.raises(TurnCancelledError, match="the turn was cancelled"):
        result.raise_for_error()
    with pytest.raises(CursorAgentError):  # what caught it before still does
        result.raise_for_error()


def test_a_cancelled_async_stream_has_a_turn_cancelled_error() -> None:
    async def main() -> None:
        async with AsyncCursorAgentClient(hanging()) as client:
            stream = client.query_stream("go")
            async for _ in stream:
                break
            stream.cancel()
            result = await stream.wait()
            assert isinstance(result.exception, TurnCancelledError)

    asyncio.run(main())


def test_a_failure_is_not_a_turn_cancelled_error() -> None:
    config = AgentConfig(transport=ScriptTransport(Script([INIT], exit_code=3)))
    with CursorAgentClient(config) as client:
        result = client.query("go")
    assert not result.success and not isinstance(result.exception, TurnCancelledError)
