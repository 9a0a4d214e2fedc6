"""An agent that never answers a setup request: the turn's ``timeout`` and ``cancel()`` still
end the turn (ACP_REQUEST_TIMEOUT is lowered so that the old behaviour fails, not hangs)."""

from __future__ import annotations

import asyncio
import time

import pytest
from acp_fake import FakeAgent

from cursor_agent_api import AsyncCursorAgentClient, CursorAgentClient
from cursor_agent_api.errors import AgentTimeoutError
from cursor_agent_api.runtime import acp_transport, groups


@pytest.fixture(autouse=True)
def shorter_request_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(acp_transport, "ACP_REQUEST_TIMEOUT", 30.0)


def _received(fake: FakeAgent, method: str) -> None:
    """Wait until the fake agent has received a ``method`` request."""
    for _ in range(2000):
        if any(f'"method": "{method}"' in line or f'"method":"{method}"' in line
               for line in fake.received()):
            return
        time.sleep(0.01)
    raise AssertionError(f"the agent never received {method}")


@pytest.mark.parametrize("method", ["initialize", "session/new", "session/set_mode"])
def test_the_turn_timeout_bounds_an_unanswered_setup_request(fake: FakeAgent, method: str) -> None:
    cfg = fake.config(timeout=1.0, session_mode="plan", env={"FAKE_ACP_HANG": method})
    with CursorAgentClient(cfg) as client:
        result = client.query("say hi")
    assert isinstance(result.exception, AgentTimeoutError), result.error
    assert f"timeout=1 s waiting for the agent's answer to {method}" in str(result.error)


def test_the_turn_timeout_bounds_an_unanswered_session_load(fake: FakeAgent) -> None:
    with CursorAgentClient(fake.config()) as client:
        first = client.query("say hi")
    cfg = fake.config(timeout=1.0, env={"FAKE_ACP_HANG": "session/load"})
    with CursorAgentClient(cfg) as client:
        result = client.query("say again", resume=first.session_id)
    assert isinstance(result.exception, AgentTimeoutError), result.error
    assert "answer to session/load" in str(result.error)


def test_async_timeout_bounds_initialize(fake: FakeAgent) -> None:
    async def main() -> str | None:
        cfg = fake.config(timeout=1.0, env={"FAKE_ACP_HANG": "initialize"})
        async with AsyncCursorAgentClient(cfg) as client:
            result = await client.query("say hi")
        assert isinstance(result.exception, AgentTimeoutError)
        return result.error

    assert "answer to initialize" in str(asyncio.run(main()))


@pytest.mark.parametrize("method", ["session/new", "session/set_mode"])
def test_cancel_while_a_setup_request_is_unanswered(fake: FakeAgent, method: str) -> None:
    cfg = fake.config(timeout=None, session_mode="plan", env={"FAKE_ACP_HANG": method})
    with CursorAgentClient(cfg) as client:
        stream = client.query_stream("say hi")
        _received(fake, method)
        stream.cancel()
        result = stream.wait(timeout=60)
        assert result.cancelled, result.error
        # the process answered initialize: it is kept
        (transport,) = client._acp.transports.values()  # type: ignore[union-attr]
        assert transport.connection is not None and transport.connection.alive


def test_cancel_during_initialize_stops_the_broken_process(fake: FakeAgent,
                                                           spawned: list[int]) -> None:
    cfg = fake.config(timeout=None, env={"FAKE_ACP_HANG": "initialize"})
    with CursorAgentClient(cfg) as client:
        stream = client.query_stream("say hi")  # returns at once: initialize is the turn's
        _received(fake, "initialize")
        stream.cancel()
        result = stream.wait(timeout=60)
        assert result.cancelled, result.error
        assert spawned and not groups.group_alive(spawned[0])
        # the next turn starts a new process (which is just as stuck: its timeout ends it)
        again = client.query("say hi", timeout=1.0)
    assert len(spawned) == 2 and "answer to initialize" in str(again.error)
