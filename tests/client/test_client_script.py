"""Turns on the in-memory script transport: the client's lifecycle rules without a process.

The same :class:`~cursor_agent_api.runtime.run.AgentRun` core runs these turns (stop policy,
fold, end-of-turn rules); only the agent is a :class:`ScriptProcess` playing given lines.
Process groups, signals and leftovers are tested against real processes
(``test_client_turns.py``, ``test_client_streaming.py``, ``test_groups.py``)."""

from __future__ import annotations

import asyncio
import re
import signal
import threading
from pathlib import Path

import pytest

from cursor_agent_api import (
    AgentConfig,
    AgentProcessError,
    AgentTimeoutError,
    AsyncCursorAgentClient,
    AuthenticationError,
    CursorAgentClient,
    EventType,
    InvalidModelError,
    ProtocolError,
    SessionError,
    UsageLimitError,
    WorkspaceTrustError,
    query,
    query_stream,
)
from cursor_agent_api.sim import messages, wire
from cursor_agent_api.testing import Script, ScriptTransport

SID = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
INIT = wire.system_init(SID, "/ws", "Auto")
USER = wire.user(SID, "What is 2 + 2?")
ANSWER = wire.assistant_final(SID, "4")
RESULT = wire.result_success(SID, "r1", "4", 12, wire.usage(5, 1))
TURN = [INIT, USER, ANSWER, RESULT]


def config(script: Script | ScriptTransport, **fields: object) -> AgentConfig:
    transport = script if isinstance(script, ScriptTransport) else ScriptTransport(script)
    fields.setdefault("result_grace", 0.2)
    fields.setdefault("kill_grace", 0.2)
    return AgentConfig(transport=transport, **fields)  # type: ignore[arg-type]


def assert_client_result(events, r):
    """The stream ends with exactly one result event: the one the client added."""
    last = events[-1]
    assert last.type is EventType.RESULT_ERROR and last.data["added_by_client"] is True
    assert last.exception is r.exception and last.data["error"] == r.error
    assert sum(e.is_result for e in events) == 1


def test_normal_turn(run_stream):
    transport = ScriptTransport(TURN)
    turn = run_stream(config(transport), "What is 2 + 2?")
    r = turn.result
    assert r.success and r.result == "4" and r.text == "4" and r.exit_code == 0
    assert turn.types() == ["system:init", "user", "assistant", "result:success"]
    assert r.session_id == SID and turn.pid is None
    assert [e.type for e in r.events] == [e.type for e in turn.events]
    assert transport.prompts == [b"What is 2 + 2?"]


def test_query_result(run_query):
    r = run_query(config(Script(TURN)), "q")
    assert r.success and r.result == "4" and r.stderr == "" and r.usage.input_tokens == 5


def test_partial_output_is_not_doubled(run_stream):
    deltas = [wire.assistant_delta(SID, t, i) for i, t in enumerate(["Pipes ", "hum ", "low"])]
    lines = [INIT, *deltas, wire.assistant_final(SID, "Pipes hum low"),
             wire.result_success(SID, "r1", "Pipes hum low", 5)]
    turn = run_stream(config(Script(lines)), "poem")
    assert turn.result.success and turn.result.text == turn.result.result == "Pipes hum low"


def test_crash_mid_stream(run_stream):
    turn = run_stream(config(Script([INIT, USER], exit_code=1, stderr=messages.crash())), "q")
    r = turn.result
    assert not r.success and r.exit_code == 1 and not r.cancelled
    assert isinstance(r.exception, AgentProcessError) and "simulated crash" in r.error
    assert turn.events[-2].type is EventType.ERROR
    assert turn.events[-2].data["code"] == "exit" and turn.events[-2].data["exit_code"] == 1
    assert_client_result(turn.events, r)


def test_hang_after_result_is_stopped_after_grace(run_query):
    r = run_query(config(Script(TURN, hang=True)), "q")
    assert r.success and r.result == "4" and r.exit_code == 143  # our SIGTERM after the grace


def test_sigterm_ignored_is_followed_by_sigkill(run_query):
    transport = ScriptTransport(TURN, hang=True, ignore={signal.SIGTERM})
    r = run_query(config(transport), "q")
    assert r.success and r.exit_code == 137
    assert transport.turns[0].process.signals_sent == [signal.SIGTERM, signal.SIGKILL]


def test_exit1_after_valid_result_is_success(run_query):
    r = run_query(config(Script(TURN, exit_code=1)), "q")
    assert r.success and r.result == "4" and r.exit_code == 1 and r.exception is None


def test_stderr_tail_is_bounded_and_plain(run_stream):
    noise = "\x1b[31mwarning\x1b[0m: something\n" * 2000
    turn = run_stream(config(Script(TURN, stderr=noise), stderr_tail_bytes=4096), "q")
    r = turn.result
    assert r.success and 0 < len(r.stderr.encode()) <= 4096 and "\x1b" not in r.stderr


def test_silence_until_idle_timeout(run_stream):
    turn = run_stream(config(Script([INIT], hang=True), idle_timeout=0.3), "q")
    r = turn.result
    assert not r.success and isinstance(r.exception, AgentTimeoutError)
    assert "0.3 s (its idle timeout)" in r.error and r.exit_code == 143
    assert turn.events[-2].data["code"] == "idle_timeout"
    assert_client_result(turn.events, r)


def test_whole_turn_timeout(run_query):
    r = run_query(config(Script(TURN, delay=0.5), timeout=0.6), "q")
    assert not r.success and isinstance(r.exception, AgentTimeoutError)
    assert "its timeout (0.6 s)" in r.error and r.exit_code == 143


def test_utf8_split_across_writes(run_stream):
    text = "naïve café — 日本語 ✓ 🚀"
    line = wire.encode(wire.result_success(SID, "r1", text, 1))
    cut = line.index("🚀".encode()) + 2  # inside the emoji
    turn = run_stream(config(Script([INIT, line[:cut], line[cut:] + b"\n"])), "q")
    assert turn.result.success and turn.result.result == text
    assert not any(e.type is EventType.RAW for e in turn.events)


def test_banner_lines_become_raw_events(run_stream):
    turn = run_stream(config(Script(["\x1b[1mWelcome\x1b[0m to the agent", *TURN])), "q")
    assert turn.result.success and turn.result.result == "4"
    raws = [e for e in turn.events if e.type is EventType.RAW]
    assert len(raws) == 1 and "\x1b" not in (raws[0].text or "")


def test_line_over_max_line_bytes_fails_the_turn_but_stream_goes_on(run_stream):
    big = wire.assistant_final(SID, "x" * 2_000_000)
    turn = run_stream(config(Script([INIT, big, RESULT]), max_line_bytes=1_000_000), "q")
    r = turn.result
    assert not r.success and isinstance(r.exception, ProtocolError)
    assert "max_line_bytes=1000000" in r.error
    errors = [e for e in turn.events if e.type is EventType.ERROR]
    assert len(errors) == 1 and errors[0].data["code"] == "line_too_long"
    assert turn.types()[-1] == "result:success"


@pytest.mark.parametrize(
    ("stderr", "error", "words"),
    [
        (messages.auth_required(), AuthenticationError, "Authentication required"),
        (messages.trust_required("/ws"), WorkspaceTrustError, "Workspace Trust Required"),
        (messages.invalid_model("x", ["auto"]), InvalidModelError, "Cannot use this model"),
        (messages.usage_limit(), UsageLimitError, "usage limit"),
        (messages.malformed_resume(SID), SessionError, "Failed to claim persistent session"),
        (messages.chat_busy(SID), SessionError, "may still be running"),
    ],
)
def test_typed_errors(run_stream, stderr, error, words):
    turn = run_stream(config(Script([], exit_code=1, stderr=stderr)), "q")
    r = turn.result
    assert not r.success and type(r.exception) is error
    assert r.exit_code == 1 and words in r.error and words in r.stderr
    assert turn.events[-2].data["error_type"] == error.__name__
    assert_client_result(turn.events, r)


def test_cancel_sync_stream_from_another_thread():
    with CursorAgentClient(config(Script([INIT], hang=True))) as client, \
            client.query_stream("q") as stream:
        first = next(stream)
        threading.Timer(0.05, stream.cancel).start()
        rest = list(stream)  # woken by the cancel
        r = stream.wait()
    assert first.type is EventType.SYSTEM_INIT and rest == []
    assert r.cancelled and not r.success and stream.cancelled and r.exit_code == 143


def test_cancel_async_stream_with_sigkill():
    async def main():
        stream = AsyncCursorAgentClient(config(Script([INIT], hang=True))).query_stream("q")
        seen = []
        async for event in stream:
            seen.append(event.type)
            stream.cancel(signal.SIGKILL)
        return await stream.wait(), seen

    r, seen = asyncio.run(main())
    assert seen == [EventType.SYSTEM_INIT] and r.cancelled and r.exit_code == 137


def test_back_pressure_pauses_the_script_and_loses_nothing(monkeypatch):
    from cursor_agent_api.runtime import sinks

    monkeypatch.setattr(sinks.ThreadEventQueue.__init__, "__defaults__", (None, 4, 1))
    lines = [wire.assistant_delta(SID, str(i), i) for i in range(200)]
    transport = ScriptTransport([INIT, *lines, RESULT])
    with CursorAgentClient(config(transport)) as client, client.query_stream("q") as stream:
        events = list(stream)
    assert len(events) == 202 and stream.result.success
    assert "".join(e.text or "" for e in events[1:-1]) == "".join(map(str, range(200)))


def test_with_changes_on_both_faces():
    lines = [INIT, wire.assistant_delta(SID, "He", 1), wire.assistant_delta(SID, "llo", 2),
             wire.result_success(SID, "r1", "Hello", 3)]
    with CursorAgentClient(config(Script(lines))) as client:
        pairs = list(client.query_stream("q").with_changes())
    appended = [c.text for _, cs in pairs for c in cs if c.kind == "text_appended"]
    assert appended == ["He", "llo"]

    async def main():
        stream = AsyncCursorAgentClient(config(Script(lines))).query_stream("q")
        return [(e, cs) async for e, cs in stream.with_changes()]

    async_pairs = asyncio.run(main())
    assert [c.text for _, cs in async_pairs for c in cs if c.kind == "text_appended"] == appended


def test_sessions_on_both_faces_share_one_bookkeeping(tmp_path):
    """``finalize_stream(stream)`` (the stream knows its prompt), recorded once; a pending
    stream is finalized before the next turn; ``load`` keeps a client it is given (when the
    file changes none of its settings, as the sync ``load`` always did)."""
    from cursor_agent_api import AsyncConversationSession, ConversationSession

    def answer(prompt: bytes) -> Script:
        return Script([INIT, wire.result_success(SID, "r", prompt.decode().upper(), 1)])

    with ConversationSession(config(ScriptTransport(answer), workspace=str(tmp_path))) as session:
        first = session.send_stream("one")
        assert session.finalize_stream(first).result == "ONE"
        assert session.finalize_stream(first) is first.result  # once
        session.send_stream("two")  # not finalized: recorded before the next turn
        assert session.send("three").result == "THREE"
        session.save(tmp_path / "s.json")
    assert [t.prompt for t in session.history] == ["one", "two", "three"]

    async def main():
        client = AsyncCursorAgentClient(config(ScriptTransport(answer), workspace=str(tmp_path)))
        later = AsyncConversationSession.load(tmp_path / "s.json", client)
        stream = later.send_stream("four")
        pending = later.send_stream("five")  # starts once "four" is finalized
        texts = [e.text async for e in pending if e.is_result]
        await later.finalize_stream(pending)
        return later, client, stream, texts

    later, client, stream, texts = asyncio.run(main())
    assert later.client is client and texts == ["FIVE"] and stream.result.result == "FOUR"
    assert [t.prompt for t in later.history][-2:] == ["four", "five"]
    assert client.config.transport.prompts == [b"four", b"five"]


REAL = Path(__file__).resolve().parent.parent / "data" / "cursor-real"
READ_TOOL = REAL / "02-hcn-0915-probe-43-partial-output-with-read-tool.ndjson"


def arithmetic(prompt: bytes) -> Script:
    """An agent that answers ``What is A op B?``."""
    a, op, b = re.match(rb"What is (\d+) ([+*]) (\d+)\?", prompt).groups()
    value = int(a) + int(b) if op == b"+" else int(a) * int(b)
    return Script([INIT, wire.assistant_delta(SID, str(value), 1),
                   wire.result_success(SID, "r", str(value), 1)])


def test_keep_events_false(run_stream):
    lines = READ_TOOL.read_bytes().splitlines(keepends=True)
    turn = run_stream(config(Script(lines), keep_events=False), "q")
    assert turn.result.success and turn.result.events == []
    assert turn.result.text == turn.result.result == "READ-OK" and len(turn.events) == len(lines)


def test_keep_events_false_stream_events_empty():
    with CursorAgentClient(config(Script(TURN), keep_events=False)) as client, \
            client.query_stream("hi") as s:
        n = sum(1 for _ in s)
    assert n == 4 and s.events == [] and s.result.events == []


def test_keep_content_false(run_stream):
    # the events carry the text and the tool results; the result keeps no second copy
    lines = READ_TOOL.read_bytes().splitlines(keepends=True)
    full = run_stream(config(Script(lines)), "q")
    lean = run_stream(config(Script(lines), keep_content=False), "q")
    assert lean.result.success and lean.result.result == full.result.result
    assert full.result.text and lean.result.text == ""
    calls = lean.result.tool_calls
    assert calls and all(c.result is None for c in calls)
    assert [(c.kind, c.status) for c in calls] == [(c.kind, c.status) for c in full.result.tool_calls]
    completed = [e.tool_call for e in lean.events if e.type is EventType.TOOL_CALL_COMPLETED]
    assert completed and all(tc is not None and tc.result for tc in completed)


def test_module_level_query_and_stream():
    cfg = config(ScriptTransport(arithmetic))
    assert query("What is 2 + 2?", cfg).result == "4"
    stream = query_stream("What is 3 + 4?", cfg)
    assert [e.type for e in stream][-1] is EventType.RESULT_SUCCESS
    assert stream.result.result == "7"
    assert query("What is 2 + 2?", cfg, model="gpt-5").success


def test_sync_client_inside_a_running_loop():
    async def notebook_cell() -> tuple[str, list[str]]:
        with CursorAgentClient(config(ScriptTransport(arithmetic))) as client:
            r = client.query("What is 2 + 2?")
            types = [e.type.value for e in client.query_stream("What is 2 + 2?")]
        return r.result, types

    result, types = asyncio.run(notebook_cell())
    assert result == "4" and types[-1] == "result:success"


def test_sync_client_from_threads():
    results = []
    with CursorAgentClient(config(ScriptTransport(arithmetic))) as client:
        threads = [threading.Thread(target=lambda i=i: results.append(
            client.query(f"What is {i} + 1?").result)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(results) == ["1", "2", "3", "4"]


def test_async_stream_without_await():
    async def main():
        stream = AsyncCursorAgentClient(config(ScriptTransport(arithmetic))).query_stream(
            "What is 2 + 2?")
        assert stream.pid is None and not stream.done  # not started until iterated
        events = [e async for e in stream]
        return events, stream

    events, stream = asyncio.run(main())
    assert events[-1].type is EventType.RESULT_SUCCESS and stream.result.result == "4"


def test_20_concurrent_async_turns():
    async def main():
        client = AsyncCursorAgentClient(config(ScriptTransport(arithmetic)))
        queries = [client.query(f"What is {i} + 100?") for i in range(10)]

        async def streamed(i: int) -> str:
            return "".join([e.text or "" async for e in client.query_stream(f"What is {i} * 1000?")
                            if e.type is EventType.RESULT_SUCCESS])

        return await asyncio.gather(*queries, *(streamed(i) for i in range(10)))

    results = asyncio.run(main())
    assert [r.result for r in results[:10]] == [str(i + 100) for i in range(10)]
    assert results[10:] == [str(i * 1000) for i in range(10)]


def test_stream_holds_no_event_it_handed_out():
    # once a stream has handed out every event it read, it holds none of them (with
    # keep_events=False): a consumer that drops a big line's event frees it before the next
    # line is read (issue 11, point 4)
    def holds(stream, event) -> bool:
        return stream._index >= len(stream._batch) and any(e is event for e in stream._batch)

    lines = READ_TOOL.read_bytes().splitlines(keepends=True)

    async def main() -> list[bool]:
        stream = AsyncCursorAgentClient(config(Script(lines), keep_events=False)).query_stream("q")
        return [holds(stream, event) async for event in stream]

    seen = asyncio.run(main())
    assert len(seen) == len(lines) and not any(seen)
    with CursorAgentClient(config(Script(lines), keep_events=False)) as client, \
            client.query_stream("q") as s:
        seen = [holds(s, event) for event in s]
    assert len(seen) == len(lines) and not any(seen)


def test_the_script_transport_lives_in_testing_and_loads_on_first_use() -> None:
    """cursor_agent_api.testing is the pytest plugin every pytest run loads: it imports neither
    the runtime nor asyncio until the script transport is asked for; the runtime's old names
    for it are the same classes."""
    import subprocess
    import sys

    code = (
        "import sys, cursor_agent_api.testing as testing\n"
        "print(sorted(m for m in ('asyncio', 'cursor_agent_api.runtime') if m in sys.modules))\n"
        "from cursor_agent_api import runtime\n"
        "print(runtime.ScriptTransport is testing.ScriptTransport, runtime.Script is testing.Script)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines() == ["[]", "True True"], done.stderr
