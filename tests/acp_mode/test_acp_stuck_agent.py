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
    cfg = fake.config(timeout=2.0, env={"FAKE_ACP_HANG": method})
    with CursorAgentClient(cfg) as client:
        # past initialize, the agent acp is first started by a turn that does not send the
        # request: the turn's timeout counts its start too, which a loaded machine can take
        # longer than (the error then named initialize)
        if method == "session/new":  # a session of another process's, loaded
            with CursorAgentClient(fake.config()) as other:
                earlier = other.query("say hi")
            assert client.query("say warm up", resume=earlier.session_id, timeout=60).success
        elif method == "session/set_mode":  # a turn without a mode
            assert client.query("say warm up", timeout=60).success
        result = client.query("say hi", session_mode="plan")
    assert isinstance(result.exception, AgentTimeoutError), result.error
    assert f"timeout (2 s) waiting for the agent's answer to {method}" in str(result.error)


def test_a_turn_timeout_replaces_the_request_timeout(fake: FakeAgent,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn with a ``timeout`` is bounded by it, not by ACP_REQUEST_TIMEOUT (its setup may
    take longer than that when the user allows it)."""
    cfg = fake.config(timeout=60, env={"FAKE_ACP_HANG": "session/set_mode"})
    with CursorAgentClient(cfg) as client:
        assert client.query("say warm up").success  # the process runs (no set_mode yet)
        monkeypatch.setattr(acp_transport, "ACP_REQUEST_TIMEOUT", 0.2)
        result = client.query("say hi", session_mode="plan", timeout=1.5)
    assert isinstance(result.exception, AgentTimeoutError), result.error
    assert "timeout (1.5 s) waiting for the agent's answer to session/set_mode" in str(result.error)


def test_the_turn_timeout_bounds_an_unanswered_session_load(fake: FakeAgent) -> None:
    with CursorAgentClient(fake.config()) as client:
        first = client.query("say hi")
    cfg = fake.config(timeout=2.0, env={"FAKE_ACP_HANG": "session/load"})
    with CursorAgentClient(cfg) as client:
        # the agent acp started first (as above): the timeout then bounds session/load alone
        assert client.query("say warm up", timeout=60).success
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


def test_initialize_unanswered_within_its_own_bound_names_the_agent_not_timeout(
        fake: FakeAgent, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a turn ``timeout``, ``initialize`` has its own bound (ACP_REQUEST_TIMEOUT), which
    no setting raises: its error says to check the agent, not to raise ``timeout`` (which
    bounds the turn, not initialize)."""
    monkeypatch.setattr(acp_transport, "ACP_REQUEST_TIMEOUT", 1.0)
    cfg = fake.config(timeout=None, env={"FAKE_ACP_HANG": "initialize"})
    with CursorAgentClient(cfg) as client:
        result = client.query("say hi")
    assert isinstance(result.exception, AgentTimeoutError), result.error
    assert "did not answer initialize within 1 s" in str(result.error)
    remedy = result.exception.remedy or ""
    assert "raise timeout" not in remedy and "--version" in remedy, remedy
    assert cfg.agent_binary in remedy


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


def test_agent_requests_pending_at_once_are_capped(fake: FakeAgent,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    """A flood of permission requests while the callback is slow: at most
    MAX_PENDING_AGENT_REQUESTS wait for it, the others are answered ``cancelled`` at once."""
    import threading

    from cursor_agent_api.permissions import Allow, PermissionRequest
    from cursor_agent_api.runtime.acp_connection import MAX_PENDING_AGENT_REQUESTS

    over = 40
    asked: list[str] = []
    gate = threading.Event()

    def can_use_tool(request: PermissionRequest) -> Allow:
        asked.append(request.session_id)
        gate.wait(60)
        return Allow()

    def release_when_the_excess_is_answered() -> None:
        for _ in range(3000):
            answers = [line for line in fake.received() if '"outcome"' in line]
            if len(answers) >= over:
                break
            time.sleep(0.01)
        gate.set()

    releaser = threading.Thread(target=release_when_the_excess_is_answered)
    releaser.start()
    with CursorAgentClient(fake.config(can_use_tool=can_use_tool)) as client:
        result = client.query(f"flood {MAX_PENDING_AGENT_REQUESTS + over}")
    releaser.join()
    assert result.success, result.error
    assert f"{over} cancelled, {MAX_PENDING_AGENT_REQUESTS} allowed" in result.result
    assert len(asked) == MAX_PENDING_AGENT_REQUESTS
    warnings = [r for r in caplog.records if "requests awaiting an answer" in r.getMessage()]
    assert len(warnings) == 1  # once per flood, not once per refused request


def test_other_requests_over_the_cap_are_refused() -> None:
    """Beyond the cap, a request other than a permission is answered ``-32603`` at once."""
    import sys

    from cursor_agent_api.runtime.acp_connection import AcpConnection

    peer = ('import sys, json\n'
            'for i in range(3):\n'
            '    print(json.dumps({"jsonrpc": "2.0", "id": i, "method": "cursor/ask_question",'
            ' "params": {}}), flush=True)\n'
            'sys.stderr.write(sys.stdin.readline())\n')  # the first answer, then exit

    async def main() -> tuple[str, int]:
        forever = asyncio.Event()

        async def handler(request: object) -> object:
            await forever.wait()  # a callback that never returns
            return {}

        conn = AcpConnection([sys.executable, "-c", peer], env=None, on_request=handler,
                             max_pending=2)
        await conn.start()
        try:
            for _ in range(3000):
                if not conn.alive:
                    break
                await asyncio.sleep(0.01)
        finally:
            await conn.close()
        return conn.stderr, conn.refused

    stderr, refused = asyncio.run(main())
    assert refused == 1
    assert '"id":2' in stderr.replace(" ", "") and "too many pending requests" in stderr
