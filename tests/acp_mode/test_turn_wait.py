"""The seam's turns (runtime/transport.py's ``Turn``) share one contract for ``wait()`` and
``add_done_callback()``: until ``start()`` has returned — not started, starting, or a start
that raised — there is nothing to wait for (``RuntimeError``, never a wait for ever); once it
has, the turn's outcome. Pinned for each turn there is: the subprocess transport's
``AgentRun`` ("print"), ``ScriptTransport``'s (the same ``AgentRun``, its process a script),
and ACP's ``AcpTurn`` (the fake ``agent acp``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from acp_fake import FakeAgent

from cursor_agent_api.config import AgentConfig
from cursor_agent_api.errors import AgentStartError
from cursor_agent_api.protocol import AgentResult
from cursor_agent_api.runtime import process as process_module
from cursor_agent_api.runtime.acp_transport import AcpTransport
from cursor_agent_api.runtime.transport import Transport, Turn, transport_for
from cursor_agent_api.testing import Script, ScriptTransport

KINDS = ["print", "script", "acp"]
RESULT = '{"type":"result","subtype":"success","is_error":false,"result":"hi"}'


def _transport(kind: str, fake: FakeAgent, *, starts: bool = True) -> tuple[Transport, AgentConfig]:
    """A transport of ``kind`` and a config its turn of "q" runs with (``starts=False``: a
    turn whose ``start()`` raises)."""
    missing = str(fake.root / "no-such-agent")
    if kind == "script":
        def cannot_play(prompt: bytes) -> Any:
            return None  # not a Script: TypeError out of the start

        return ScriptTransport(Script([RESULT]) if starts else cannot_play), AgentConfig()
    if kind == "print":
        agent = fake.root / "print-agent"
        agent.write_text(f"#!/bin/sh\ncat >/dev/null\necho '{RESULT}'\n")
        agent.chmod(0o755)
        config = AgentConfig(agent_binary=str(agent) if starts else missing,
                             workspace=str(fake.workspace))
        return transport_for(config), config
    config = fake.config() if starts else fake.config(agent_binary=missing)
    return transport_for(config), config


def _when_spawning(kind: str, transport: Transport, monkeypatch: pytest.MonkeyPatch,
                   then: Callable[[], None]) -> None:
    """Run ``then()`` as the turn's agent is spawned: inside its ``start()``."""
    if kind == "script":
        assert isinstance(transport, ScriptTransport)
        real_spawn = transport._spawn

        async def spawn_script(run: Any) -> Any:
            then()
            return await real_spawn(run)

        monkeypatch.setattr(transport, "_spawn", spawn_script)
        return
    real = process_module.AgentProcess.spawn

    async def spawn(cls: Any, *args: Any, **kwargs: Any) -> Any:
        then()
        return await real(*args, **kwargs)

    monkeypatch.setattr(process_module.AgentProcess, "spawn", classmethod(spawn))


def _now(turn: Turn) -> tuple[str, str]:
    """What ``wait()`` and ``add_done_callback()`` do at this moment: ``"RuntimeError"``, or
    ``"waits"`` and ``"taken"`` (the waiter is stepped once, then closed)."""
    waiter = turn.wait()
    try:
        waiter.send(None)
    except RuntimeError:
        waited = "RuntimeError"
    except StopIteration:
        waited = "returned"
    else:
        waited = "waits"
    finally:
        waiter.close()
    try:
        turn.add_done_callback(lambda _: None)
    except RuntimeError:
        taken = "RuntimeError"
    else:
        taken = "taken"
    return waited, taken


async def _close(transport: Transport) -> None:
    if isinstance(transport, AcpTransport):
        await transport.retire()  # (its agent acp stops)


REFUSED = ("RuntimeError", "RuntimeError")


@pytest.mark.parametrize("kind", KINDS)
def test_wait_and_done_callbacks_before_during_and_after_start(
        kind: str, fake: FakeAgent, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, tuple[str, str]] = {}
    called: list[asyncio.Future[AgentResult]] = []

    async def main() -> AgentResult:
        transport, config = _transport(kind, fake)
        turn: Turn | None = None

        def during() -> None:
            assert turn is not None
            seen["during"] = _now(turn)

        _when_spawning(kind, transport, monkeypatch, during)
        turn = transport.open_turn(config, "q")
        try:
            seen["before"] = _now(turn)
            await turn.start()
            turn.add_done_callback(called.append)
            return await turn.wait()
        finally:
            await _close(transport)

    result = asyncio.run(main())
    assert seen == {"before": REFUSED, "during": REFUSED}
    assert result.success, result.error
    assert len(called) == 1 and called[0].result() is result


@pytest.mark.parametrize("kind", KINDS)
def test_after_a_start_that_raised_there_is_nothing_to_wait_for(kind: str, fake: FakeAgent) -> None:
    async def main() -> tuple[str, str]:
        transport, config = _transport(kind, fake, starts=False)
        turn = transport.open_turn(config, "q")
        try:
            with pytest.raises((AgentStartError, TypeError)):
                await turn.start()
            return _now(turn)
        finally:
            await _close(transport)

    assert asyncio.run(main()) == REFUSED

