"""A mistake in a :class:`ScriptTransport`'s script is a ``TypeError`` naming it, out of the
turn's start (or out of the constructor), never a turn that waits forever; a failure while
playing ends the turn at once with the error on its stderr.

Each turn here runs with ``timeout=5``: on a script that never plays, the old transport left
the turn waiting until that bound stopped it, with no word of the cause."""

from __future__ import annotations

import asyncio

import pytest

from cursor_agent_api import AgentConfig, AgentProcessError, CursorAgentClient, EventType
from cursor_agent_api.runtime.sinks import AsyncEventQueue
from cursor_agent_api.testing import Script, ScriptTransport

RESULT = {"type": "result", "subtype": "success", "is_error": False, "result": "4", "session_id": "s"}


def query(transport: ScriptTransport) -> None:
    with CursorAgentClient(transport=transport, timeout=5) as client:
        client.query("hi")


def forgot_a_branch(prompt: bytes) -> Script | None:
    if b"special" in prompt:
        return Script([RESULT])
    return None


@pytest.mark.parametrize(("transport", "words"), [
    (lambda: ScriptTransport(forgot_a_branch), "returned None for the prompt b'hi', not a Script"),
    (lambda: ScriptTransport(lambda prompt: [RESULT]), "returned [{'type': 'result'"),
    (lambda: ScriptTransport([{"ids": {1, 2}}, RESULT]), "Script.stdout[0]: cannot encode {'ids': {1, 2}}"),
    (lambda: ScriptTransport([RESULT, {1: "x"}]), "Script.stdout[1]: cannot encode {1: 'x'} as JSON"),
    (lambda: ScriptTransport([RESULT, 7]), "Script.stdout[1]: a str, bytes or dict, got 7"),
], ids=["callable-returns-none", "callable-returns-list", "a-set", "an-int-key", "not-a-line"])
def test_a_script_that_cannot_play_raises_at_start(transport, words):
    with pytest.raises(TypeError) as raised:
        query(transport())
    assert words in str(raised.value)


@pytest.mark.parametrize(("make", "words"), [
    (lambda: ScriptTransport(None), "not a NoneType"),
    (lambda: ScriptTransport(42), "not a int"),
    (lambda: ScriptTransport('{"type":"result","subtype":"success","result":"4"}'),
     "not a str (one line? put it in a list)"),
    (lambda: ScriptTransport(b'{"type":"result"}\n'), "not a bytes (one line? put it in a list)"),
    (lambda: ScriptTransport([], exit_code=1, stderr=123), "Script.stderr: a str or bytes, got 123"),
    (lambda: ScriptTransport([RESULT], exit_code=None), "Script.exit_code: an int, got None"),
    (lambda: ScriptTransport([RESULT], delay="1"), "Script.delay: a number of seconds >= 0, got '1'"),
    (lambda: ScriptTransport([RESULT], ignore=15), "Script.ignore: signal numbers, got 15"),
    (lambda: Script("one line"), "Script.stdout: a sequence of lines, got a str"),
], ids=["none", "int", "str", "bytes", "stderr-int", "exit-code-none", "delay-str", "ignore-int",
        "script-of-a-str"])
def test_a_wrong_script_is_refused_when_made(make, words):
    with pytest.raises(TypeError) as raised:
        make()
    assert words in str(raised.value)


def test_a_script_mutated_after_it_was_made_is_checked_at_start():
    script = Script([RESULT])
    script.stderr = 5  # type: ignore[assignment]
    with pytest.raises(TypeError, match=r"Script\.stderr"):
        query(ScriptTransport(script))


def test_a_failure_while_playing_ends_the_turn_with_it():
    """Whatever goes wrong inside the playing task (here: the sink the turn hands its events
    to) ends the turn: exit code 1, the error on its stderr — not a task dead in the
    background."""
    transport = ScriptTransport(["a banner line", RESULT])

    class BrokenSink(AsyncEventQueue):
        def put(self, events, changes):
            if any(event.type is EventType.RAW for event in events):  # the banner; the
                raise RuntimeError("observer broke")  # client's own result event goes in fine
            super().put(events, changes)

    async def main():
        turn = transport.open_turn(AgentConfig(transport=transport, timeout=5), "hi",
                                   sink=BrokenSink())
        await turn.start()
        return await turn.wait()

    result = asyncio.run(main())
    assert result.exit_code == 1 and not result.success
    assert isinstance(result.exception, AgentProcessError)
    assert "playing the script failed: RuntimeError: observer broke" in result.stderr
