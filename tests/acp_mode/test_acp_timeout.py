"""A turn's ``timeout`` after its prompt was sent: the turn is cancelled and, as a cancel does,
waits for the agent's answer to the prompt (bounded by ``kill_grace``, then the process group
is stopped) before it ends with ``AgentTimeoutError`` and its session takes the next prompt."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from collections.abc import Callable
from typing import Any

import pytest
from acp_fake import FakeAgent

from cursor_agent_api import AsyncCursorAgentClient, CursorAgentClient
from cursor_agent_api.errors import AgentTimeoutError
from cursor_agent_api.runtime.acp_turn import AcpTurn


def test_a_timed_out_turn_keeps_what_the_agent_says_after_the_cancel(fake: FakeAgent) -> None:
    """What the agent still writes after the timeout's cancel is the timed-out turn's, and the
    next prompt on the session (sent at once, as a retrying bot does) goes out only once the
    agent is done with the old one. (The fake, cancelled, goes on until the session's next
    prompt arrives, at most 1 s. The turn used to end at the timeout: its late words went to
    nobody or, the next prompt arriving, into the next turn's answer.)"""
    config = fake.config(kill_grace=30, env={"FAKE_ACP_CANCEL_LAG": "1"})
    with CursorAgentClient(config) as client:
        first = client.query("say hello")
        sid = first.session_id
        timed_out = client.query("slow", resume=sid, timeout=0.5)
        retry = client.query("say again", resume=sid)
        history = client.query("history", resume=sid)
    assert isinstance(timed_out.exception, AgentTimeoutError) and not timed_out.success
    assert "timeout (0.5 s) waiting for the agent's answer to session/prompt" in str(timed_out.error)
    assert not timed_out.cancelled and timed_out.session_id == sid
    assert retry.success and retry.result == "again "  # (was " (stopped late)again ")
    assert timed_out.text == "working (stopped late)"
    # the retry's prompt reached the agent after the timed-out one had ended
    assert history.result == "earlier: say hello | slow | say again"


class Waiting(threading.Event):
    """Set once a timed-out turn waits for its cancelled prompt's answer; ``then`` is called
    there (on the turn's loop)."""

    then: Callable[[], object] | None = None


@pytest.fixture
def waiting(monkeypatch: pytest.MonkeyPatch) -> Waiting:
    event = Waiting()
    original = AcpTurn._cancelled_answer

    async def spy(self: AcpTurn) -> None:
        event.set()
        if event.then is not None:
            event.then()
        await original(self)

    monkeypatch.setattr(AcpTurn, "_cancelled_answer", spy)
    return event


@pytest.mark.parametrize("how", ["the process dies", "cancel(SIGKILL)"])
def test_the_wait_after_a_timeout_ends_with_the_process(fake: FakeAgent, waiting: Waiting,
                                                        how: str) -> None:
    """The agent ignores the cancel for long (its answer would come after 600 s, and so would
    cancel's fallback): the process dying, or a cancel with SIGKILL, ends the wait at once."""
    config = fake.config(kill_grace=600, env={"FAKE_ACP_CANCEL_LAG": "600"})
    with CursorAgentClient(config) as client:
        stream = client.query_stream("slow", timeout=0.5)
        assert waiting.wait(60)
        if how == "the process dies":
            assert stream.pid is not None
            os.killpg(stream.pid, signal.SIGKILL)
        else:
            stream.cancel(signal.SIGKILL)
        result = stream.wait(timeout=60)  # (TimeoutError if the turn still waited)
        after = client.query("say again", resume=result.session_id)
    assert isinstance(result.exception, AgentTimeoutError) and not result.cancelled
    assert after.success and after.result == "again "


def test_cancelling_the_awaiting_task_during_the_wait(fake: FakeAgent,
                                                      waiting: Waiting) -> None:
    """An async ``query`` cancelled (Ctrl-C) while its timed-out turn waits: the turn ends
    as a cancelled turn does (cancel's fallback after ``kill_grace``), then the cancellation
    propagates; the chat goes on."""
    async def main() -> tuple[bool, Any]:
        async with AsyncCursorAgentClient(fake.config(kill_grace=0.5, env={
                "FAKE_ACP_CANCEL_LAG": "600"})) as client:
            first = await client.query("say hello")
            task = asyncio.ensure_future(client.query("slow", resume=first.session_id,
                                                      timeout=0.5))
            waiting.then = task.cancel
            try:
                await task
            except asyncio.CancelledError:
                cancelled = True
            else:
                cancelled = False
            return cancelled, await client.query("history", resume=first.session_id)

    cancelled, history = asyncio.run(main())
    assert cancelled and history.result == "earlier: say hello"


def test_a_cancel_while_the_prompt_waits_for_the_connection_sends_no_prompt(
        fake: FakeAgent, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cancel that lands once the session is open but while the turn waits for the
    connection (another turn is starting the process) ends the turn cancelled at once, its
    prompt never sent. (It was not seen there: the prompt went out after it, with no
    session/cancel, and the turn ran to its end; then it waited for the connection first.)"""
    from cursor_agent_api.runtime.acp_transport import AcpTransport

    armed: list[bool] = []
    original_setup, original_connect = AcpTurn._setup, AcpTransport.connect

    async def setup(self: AcpTurn, notes: Any) -> None:
        await original_setup(self, notes)
        armed.append(True)  # the next connect is the prompt's

    async def main() -> tuple[Any, Any]:
        entered, gate = asyncio.Event(), asyncio.Event()

        async def connect(self: AcpTransport, *args: Any, **kwargs: Any) -> Any:
            if armed and not entered.is_set():
                entered.set()
                await gate.wait()
            return await original_connect(self, *args, **kwargs)

        monkeypatch.setattr(AcpTransport, "connect", connect)
        async with AsyncCursorAgentClient(fake.config()) as client:
            first = await client.query("say hello")
            monkeypatch.setattr(AcpTurn, "_setup", setup)
            stream = await client.query_stream("say later", resume=first.session_id)
            await entered.wait()
            stream.cancel()
            # ends without the connection (another turn's agent could be stuck in initialize
            # for up to 120 s); 30 s: a hang guard, not a timing
            cancelled = await asyncio.wait_for(stream.wait(), 30)
            gate.set()
            monkeypatch.setattr(AcpTurn, "_setup", original_setup)
            history = await client.query("history", resume=first.session_id)
        return cancelled, history

    cancelled, history = asyncio.run(main())
    assert cancelled.cancelled and not cancelled.success, cancelled.error
    assert history.result == "earlier: say hello"  # "say later" never reached the agent


def test_a_cancel_as_the_prompt_is_handed_off_cancels_it_at_once(
        fake: FakeAgent, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cancel already queued on the loop as the turn hands ``session/prompt`` to the task
    that sends it (as one from another thread, or the server's Stop, lands): either the prompt
    goes out first and the cancel after it, or neither does. (The cancel went out first, the
    agent ignored it with no prompt running, and the turn waited ``kill_grace`` for cancel's
    fallback to stop the whole process, every session on it.)"""
    armed: list[bool] = []
    original = AcpTurn._prompt_blocks

    def blocks(self: AcpTurn) -> Any:
        if armed:
            armed.clear()
            asyncio.get_running_loop().call_soon(self.cancel)  # in the ready queue now
        return original(self)

    monkeypatch.setattr(AcpTurn, "_prompt_blocks", blocks)

    async def main() -> tuple[Any, Any]:
        async with AsyncCursorAgentClient(fake.config(kill_grace=5)) as client:
            first = await client.query("say hello")
            armed.append(True)
            cancelled = await client.query("slow", resume=first.session_id)
            again = await client.query("say again", resume=first.session_id)
        return cancelled, again

    cancelled, again = asyncio.run(main())
    assert cancelled.cancelled and not cancelled.success, cancelled.error
    assert again.success, again.error
    methods = [json.loads(line).get("method") for line in fake.received()]
    assert methods.count("initialize") == 1  # the process was never stopped
    wire = [m for m in methods if m in ("session/prompt", "session/cancel")]
    # after the first turn: "slow" not sent at all, or sent before its cancel; then "say again"
    assert wire[1:] in (["session/prompt"],
                        ["session/prompt", "session/cancel", "session/prompt"]), wire
