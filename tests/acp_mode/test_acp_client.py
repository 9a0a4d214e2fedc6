"""The ACP transport end to end, against a fake ``agent acp`` subprocess (tests/acp_mode/fake_agent.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from acp_fake import FakeAgent

from cursor_agent_api import AgentConfig, AsyncCursorAgentClient, CursorAgentClient, EventType
from cursor_agent_api.errors import AgentProcessError, TurnCancelledError
from cursor_agent_api.permissions import (
    Allow,
    Answer,
    Cancel,
    Deny,
    PermissionRequest,
    Plan,
    QuestionRequest,
    Reject,
)
from cursor_agent_api.protocol import ToolKind, ToolStatus
from cursor_agent_api.runtime.acp_turn import AcpTurn
from cursor_agent_api.sessions import AsyncConversationSession, ConversationSession


def _pids(client: Any) -> list[int | None]:
    """The pids of the client's live ``agent acp`` processes."""
    return [t.pid for t in client._acp.transports.values() if not t.closed]


def _decisions(result: Any) -> list[tuple[str | None, str | None]]:
    return [(e.data.get("decision"), e.data.get("option_id")) for e in result.events
            if e.type is EventType.INTERACTION_QUERY and e.subtype == "response"]


def test_a_callback_denies_rm_and_allows_ls(fake: FakeAgent) -> None:
    asked: list[PermissionRequest] = []

    def can_use_tool(request: PermissionRequest) -> Allow | Deny:
        asked.append(request)
        if request.command and request.command.startswith("rm"):
            return Deny("never rm")
        return Allow()

    with CursorAgentClient(fake.config(can_use_tool=can_use_tool)) as client:
        denied = client.query("run rm -rf build")
        allowed = client.query("run ls", resume=denied.session_id)
    assert [r.kind for r in asked] == [ToolKind.SHELL, ToolKind.SHELL]
    assert [r.command for r in asked] == ["rm -rf build", "ls"]
    assert asked[0].reason == "Not in allowlist: rm"
    assert [o.kind for o in asked[0].options] == ["allow_once", "allow_always", "reject_once"]
    # what the agent saw
    assert denied.success and "rm -rf build was not allowed (reject-once)" in denied.result
    assert allowed.success and allowed.result == "I ran ls."
    # the fold: the rejected call is REJECTED (Cursor says "completed"), the allowed one ran
    (rm,) = denied.tool_calls
    assert rm.kind is ToolKind.SHELL and rm.status is ToolStatus.REJECTED
    assert rm.error_message == "never rm"
    (ls,) = allowed.tool_calls
    assert ls.status is ToolStatus.SUCCEEDED and ls.output == "ran ls\n" and ls.exit_code == 0
    assert _decisions(denied) == [("reject_once", "reject-once")]
    assert _decisions(allowed) == [("allow_once", "allow-once")]
    assert allowed.usage is None and allowed.duration_ms is not None
    assert {e.transport for e in allowed.events} == {"acp"}
    assert allowed.session_id == denied.session_id


def test_async_client_async_callback_and_one_process(fake: FakeAgent) -> None:
    async def can_use_tool(request: PermissionRequest) -> Allow:
        await asyncio.sleep(0)
        return Allow(remember=True)

    async def main() -> tuple[Any, Any, set[int | None]]:
        async with AsyncCursorAgentClient(fake.config(can_use_tool=can_use_tool)) as client:
            pids = set()
            stream = client.query_stream("run echo hi")
            async for _ in stream:
                pids.add(stream.pid)
            first = await stream.wait()
            second = await client.query("say two words", resume=first.session_id)
            pids.update(_pids(client))
            return first, second, pids

    first, second, pids = asyncio.run(main())
    assert _decisions(first) == [("allow_always", "allow-always")]
    assert first.result == "I ran echo hi."
    assert second.result == "two words " and second.success
    assert len(pids) == 1  # one long-lived process for both turns


@pytest.mark.parametrize(("fields", "expected"), [
    ({}, "reject-once"),                                           # the default: deny
    ({"permission_mode": "allow"}, "allow-once"),
    ({"permission_mode": "read-only"}, "reject-once"),
    ({"allowed_tools": ["Shell(ls)"]}, "allow-once"),
    ({"permission_mode": "allow", "denied_tools": ["Shell(l*)"]}, "reject-once"),
])
def test_policies_without_a_callback(fake: FakeAgent, fields: dict[str, Any], expected: str) -> None:
    with CursorAgentClient(fake.config(**fields)) as client:
        result = client.query("run ls -la")
    assert _decisions(result)[0][1] == expected


def test_a_permission_timeout_answers_reject_once(fake: FakeAgent) -> None:
    release = threading.Event()

    def slow(request: PermissionRequest) -> Allow:
        release.wait(30)
        return Allow()

    try:
        with CursorAgentClient(fake.config(can_use_tool=slow, permission_timeout=0.2)) as client:
            result = client.query("run make")
    finally:
        release.set()
    assert _decisions(result) == [("reject_once", "reject-once")]
    assert result.tool_calls[0].status is ToolStatus.REJECTED
    assert "permission timeout" in (result.tool_calls[0].error_message or "")


@pytest.mark.parametrize(("fields", "expected"), [({}, "reject-once"),
                                                 ({"allowed_tools": ["Shell(make)"]}, "allow-once")])
def test_requests_between_turns_are_answered_by_the_clients_settings(
        fake: FakeAgent, fields: dict[str, Any], expected: str) -> None:
    with CursorAgentClient(fake.config(**fields)) as client:
        first = client.query("background")
        after = client.query("history", resume=first.session_id)
    assert after.result == f"earlier: background | background got {expected}"


def test_noise_on_stdout_is_a_raw_event_of_the_running_turn(fake: FakeAgent) -> None:
    with CursorAgentClient(fake.config()) as client:
        result = client.query("noise")
    raws = [e for e in result.events if e.type is EventType.RAW]
    assert [e.text for e in raws] == ["warning: something odd"] and result.success
    assert raws[0].transport == "acp"


def test_a_missing_agent_raises_and_a_failed_start_is_a_result(fake: FakeAgent) -> None:
    from cursor_agent_api.errors import AcpRequestError, AgentNotFoundError

    with CursorAgentClient(fake.config(agent_binary=str(fake.root / "nope"))) as client, \
            pytest.raises(AgentNotFoundError):
        client.query("say hi")
    with CursorAgentClient(fake.config(env={"FAKE_ACP_INIT_ERROR": "1"})) as client:
        result = client.query("say hi")
    assert isinstance(result.exception, AcpRequestError) and "no can do" in (result.error or "")
    assert result.exception.method == "initialize"


def test_logged_out_is_an_authentication_error(fake: FakeAgent) -> None:
    from cursor_agent_api.errors import AuthenticationError

    with CursorAgentClient(fake.config(env={"FAKE_ACP_LOGGED_OUT": "1"})) as client:
        result = client.query("say hi")
    assert isinstance(result.exception, AuthenticationError)
    assert "agent login" in (result.error or "")


def test_an_unknown_agent_request_gets_method_not_found(fake: FakeAgent) -> None:
    with CursorAgentClient(fake.config()) as client:
        result = client.query("unknown")
    assert result.success and result.result == "unknown answered -32601"


def test_questions_plans_todos_and_tasks(fake: FakeAgent) -> None:
    questions: list[QuestionRequest] = []
    plans: list[Plan] = []

    def on_question(q: QuestionRequest) -> Answer:
        questions.append(q)
        return Answer("full")

    def on_plan(plan: Plan) -> Reject:
        plans.append(plan)
        return Reject("too big")

    with CursorAgentClient(fake.config(on_question=on_question, on_plan=on_plan)) as client:
        asked = client.query("ask")
        fallback = client.query("askfallback", resume=asked.session_id)
        planned = client.query("plan", resume=asked.session_id)
        todos = client.query("todos", resume=asked.session_id)
    assert asked.result == ('answer: {"outcome": "answered", "answers": '
                            '[{"questionId": "q1", "selectedOptionIds": ["full"]}]}')
    assert questions[0].questions[0].prompt == "Which approach?" and not questions[0].fallback
    # the __ask_question_skip__ fallback went to on_question, never to "approve"
    assert fallback.result == "fallback answer: full" and questions[1].fallback
    assert [o.id for o in questions[1].questions[0].options] == ["small", "full"]
    assert planned.result == "plan: rejected" and plans[0].name == "Rename"
    assert _decisions(planned) == [("rejected", None)]
    kinds = [(c.kind, c.name) for c in todos.tool_calls]
    assert (ToolKind.TODOS, "updateTodosToolCall") in kinds
    assert (ToolKind.FUNCTION, "Task") in kinds
    todo = next(c for c in todos.tool_calls if c.kind is ToolKind.TODOS)
    assert todo.todos == [{"id": "1", "content": "Implement", "status": "in_progress"}]


def test_without_on_question_questions_are_skipped(fake: FakeAgent) -> None:
    with CursorAgentClient(fake.config()) as client:
        result = client.query("askfallback")
    assert result.result == "fallback answer: __ask_question_skip__"


def test_cancel_keeps_the_session(fake: FakeAgent) -> None:
    with CursorAgentClient(fake.config()) as client:
        first = client.query("say hello")
        stream = client.query_stream("slow", resume=first.session_id)
        for event in stream:
            if event.type is EventType.ASSISTANT_DELTA:
                pid = stream.pid
                stream.cancel()
        cancelled = stream.wait()
        after = client.query("history", resume=first.session_id)
        assert _pids(client) == [pid]
    assert cancelled.cancelled and not cancelled.success
    assert isinstance(cancelled.exception, TurnCancelledError)  # not a bare CursorAgentError
    assert after.success and after.result == "earlier: say hello | slow"


def test_a_cancelled_consumer_cancels_the_turn_and_the_session_goes_on(fake: FakeAgent) -> None:
    # review of a bot (F1): a bot that keeps its stream and cancels the reply's task (a timeout);
    # the turn is cancelled (session/cancel) before the cancellation propagates
    async def main() -> None:
        async with AsyncCursorAgentClient(fake.config()) as client:
            first = await client.query("say hello")
            (pid,) = _pids(client)
            stream = client.query_stream("slow", resume=first.session_id)
            working = asyncio.Event()

            async def reply() -> None:
                async for event in stream:
                    if event.type is EventType.ASSISTANT_DELTA:
                        working.set()  # then it waits for the next event

            task = asyncio.create_task(reply())
            await working.wait()
            task.cancel()  # what asyncio.timeout / wait_for do as the reply takes too long
            with pytest.raises(asyncio.CancelledError):
                await task
            assert stream.done, "the turn went on after its consumer was cancelled"
            result = stream.result
            assert result is not None and result.cancelled
            after = await client.query("history", resume=first.session_id)
            assert _pids(client) == [pid]
        assert after.result == "earlier: say hello | slow"

    asyncio.run(main())


def test_cancel_without_support_stops_the_group_and_loads_the_session(fake: FakeAgent) -> None:
    config = fake.config(env={"FAKE_ACP_NO_CANCEL": "1"}, kill_grace=0.3)
    with CursorAgentClient(config) as client:
        first = client.query("say hello")
        (pid,) = _pids(client)
        stream = client.query_stream("slow", resume=first.session_id)
        for event in stream:
            if event.type is EventType.ASSISTANT_DELTA:
                stream.cancel()
        cancelled = stream.wait()
        after = client.query("history", resume=first.session_id)
        (new_pid,) = _pids(client)
    assert cancelled.cancelled
    assert pid is not None and new_pid is not None and new_pid != pid
    assert after.result == "earlier: say hello"  # the killed turn is lost, the session is not
    assert '"method":"session/load"' in "".join(fake.received()).replace(" ", "")


@pytest.mark.parametrize(("mode", "fallback"), [("1", "cancel_timeout"),
                                               ("error", "cancel_unsupported")])
def test_cancel_fallback_reason(fake: FakeAgent, mode: str, fallback: str) -> None:
    # kill_grace long for the -32601 case: only the error answer can stop it early
    grace = 0.3 if mode == "1" else 30.0
    with CursorAgentClient(fake.config(env={"FAKE_ACP_NO_CANCEL": mode}, kill_grace=grace)) as client:
        stream = client.query_stream("slow")
        for event in stream:
            if event.type is EventType.ASSISTANT_DELTA:
                stream.cancel()
        result = stream.wait()
        assert isinstance(stream._run, AcpTurn)
        assert stream._run.fallback == fallback
        after = client.query("say still here", resume=result.session_id)
    assert result.cancelled and after.success


def test_a_cancelled_prompt_answered_with_an_error_is_a_cancelled_turn(fake: FakeAgent) -> None:
    # review of ACP facts (2026-11-24), finding 9: a build may answer the cancelled prompt with
    # a JSON-RPC error rather than stopReason "cancelled"; the user's cancel is not a failure
    with CursorAgentClient(fake.config(env={"FAKE_ACP_CANCEL_ERROR": "1"})) as client:
        stream = client.query_stream("slow")
        for event in stream:
            if event.type is EventType.ASSISTANT_DELTA:
                stream.cancel()
        cancelled = stream.wait()
        after = client.query("say still here", resume=cancelled.session_id)
    assert cancelled.cancelled and "Request cancelled" not in (cancelled.error or "")
    assert after.success


def test_cancel_from_the_callback_cancels_the_turn(fake: FakeAgent) -> None:
    with CursorAgentClient(fake.config(can_use_tool=lambda request: Cancel())) as client:
        result = client.query("run make")
        after = client.query("history", resume=result.session_id)
    assert result.cancelled and _decisions(result) == [("cancelled", None)]
    assert after.result == "earlier: run make"


def test_a_process_killed_mid_turn_fails_that_turn_typed_and_the_next_works(fake: FakeAgent) -> None:
    with CursorAgentClient(fake.config()) as client:
        first = client.query("say hello")
        crashed = client.query("crash", resume=first.session_id)
        after = client.query("history", resume=first.session_id)
    assert not crashed.success and isinstance(crashed.exception, AgentProcessError)
    assert crashed.exception.exit_code == 3
    assert "the fake agent crashed" in crashed.stderr
    assert crashed.events[-1].type is EventType.RESULT_ERROR
    assert after.success and after.result == "earlier: say hello"


def test_sigkill_from_outside_mid_turn(fake: FakeAgent) -> None:
    with CursorAgentClient(fake.config()) as client:
        stream = client.query_stream("slow")
        for event in stream:
            if event.type is EventType.ASSISTANT_DELTA and stream.pid:
                os.killpg(stream.pid, signal.SIGKILL)
        killed = stream.wait()
        after = client.query("history", resume=killed.session_id)
    assert isinstance(killed.exception, AgentProcessError) and not killed.cancelled
    assert after.success and after.result == "earlier: "


def test_sessions_continue_and_switch_mode(fake: FakeAgent) -> None:
    with ConversationSession(fake.config()) as session:
        session.send("say one")
        session.client.set_session_mode(session.session_id, "plan")
        options = session.client.set_session_option(session.session_id, "model", "gpt-9")
        second = session.send("history")
        setup = session.client.session_setup(session.session_id)
    assert second.result == "earlier: say one"
    assert options == {"configOptions": [{"id": "model", "currentValue": "gpt-9"}]}
    # what the client set is the session's now (the agent said "agent" at session/new)
    assert (setup["modes"]["currentModeId"], setup["models"]["currentModelId"]) == ("plan", "gpt-9")


def test_async_session(fake: FakeAgent) -> None:
    async def main() -> str:
        async with AsyncConversationSession(fake.config()) as session:
            await session.send("say a")
            return (await session.send("history")).result

    assert asyncio.run(main()) == "earlier: say a"


def test_image_prompts(fake: FakeAgent, tmp_path: Any) -> None:
    image = tmp_path / "shot.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n")
    with CursorAgentClient(fake.config()) as client:
        result = client.query("what is this?", images=[str(image)])
    assert result.result == "got 1 image(s) of image/png "
    with CursorAgentClient(fake.config(env={"FAKE_ACP_NO_IMAGE": "1"})) as client:
        refused = client.query("what is this?", images=[str(image)])
    assert not refused.success and "promptCapabilities.image" in (refused.error or "")


def test_an_empty_image_path_or_a_folder_is_named_for_what_it_is(fake: FakeAgent,
                                                                tmp_path: Any) -> None:
    # was: [""] refused only when a turn ran; a folder was "not an image file (application/...)"
    with pytest.raises(ValueError, match="images must be paths of image files"):
        AgentConfig(transport="acp", images=[""])
    with CursorAgentClient(fake.config()) as client:
        folder = client.query("what is this?", images=[str(tmp_path)])
    assert not folder.success and "is a directory, not an image file" in (folder.error or "")


def test_edits_and_mcp_calls_are_mapped(fake: FakeAgent) -> None:
    seen: list[PermissionRequest] = []

    def can_use_tool(request: PermissionRequest) -> Allow:
        seen.append(request)
        return Allow()

    with CursorAgentClient(fake.config(can_use_tool=can_use_tool)) as client:
        edit = client.query("edit /tmp/new.py")
        mcp = client.query("mcp")
    (call,) = edit.tool_calls
    assert call.kind is ToolKind.EDIT and call.path == "/tmp/new.py"
    assert call.new_content == "print('hi')\n"  # Cursor's "++ b/<path>" header line stripped
    assert call.diff == "--- /dev/null\n+++ b/tmp/new.py\n@@ -0,0 +1 @@\n+print('hi')\n"
    assert (seen[0].kind, seen[0].mcp_server, seen[0].mcp_tool) == (ToolKind.MCP, "calc", "add")
    assert mcp.tool_calls[0].kind is ToolKind.MCP and mcp.result == "mcp allow-once"


def test_timeout_cancels_and_fails_typed(fake: FakeAgent) -> None:
    from cursor_agent_api.errors import AgentTimeoutError

    # the agent takes a while to end the timed-out turn (writing its session, 0.3 s): the
    # next prompt goes out once it has answered (tests/acp_mode/test_acp_timeout.py). (It used
    # to go out at once, and the fake then wrote the file in place: the next turn, reading it
    # truncated, died unanswered; seen once as a 60 s hang under load.)
    config = fake.config(timeout=0.5, kill_grace=30, env={"FAKE_ACP_HISTORY_DELAY": "0.3"})
    with CursorAgentClient(config) as client:
        result = client.query("slow")
        # (the next turn with a timeout of its own: 0.5 s is short for a loaded machine)
        after = client.query("say fine", resume=result.session_id, timeout=60)
        history = client.query("history", resume=result.session_id)
    assert isinstance(result.exception, AgentTimeoutError)
    assert after.success, (result.error, after.error, after.stderr)
    assert history.result == "earlier: slow | say fine"


def test_a_sync_stream_folds_nothing_before_its_consumer_asks(fake: FakeAgent) -> None:
    import concurrent.futures

    with CursorAgentClient(fake.config()) as client:
        stream = client.query_stream("say a b c")
        # the whole turn runs before the consumer asks: its events must wait for it
        concurrent.futures.wait([stream._finished], timeout=60)
        assert stream._finished.done(), "the turn never ended"
        pairs = list(stream.with_changes())
        result = stream.wait()
    assert result.success and [e for e, _ in pairs] == result.events
    assert any(c.kind == "text_appended" for _, changes in pairs for c in changes)


def test_concurrent_sessions_share_one_process_and_async_cancel_keeps_the_chat(
        fake: FakeAgent) -> None:
    async def main() -> tuple[list[Any], Any, Any, set[int | None]]:
        async with AsyncCursorAgentClient(fake.config()) as client:
            both = await asyncio.gather(client.query("say left"), client.query("say right"))
            stream = client.query_stream("slow", resume=both[0].session_id)
            async for event in stream:
                if event.type is EventType.ASSISTANT_DELTA:
                    stream.cancel()
            cancelled = await stream.wait()
            after = await client.query("history", resume=both[0].session_id)
            return list(both), cancelled, after, set(_pids(client))

    both, cancelled, after, pids = asyncio.run(main())
    assert [r.result for r in both] == ["left ", "right "]
    assert both[0].session_id != both[1].session_id and len(pids) == 1
    assert cancelled.cancelled and after.result == "earlier: say left | slow"


def test_a_turn_with_other_process_settings_gets_its_own_agent_and_a_model_change_does_not(
        fake: FakeAgent) -> None:
    """The client's ``agent acp`` was made from the first turn's config: a later turn with
    another API key (or binary, flags) ran on it with the first turn's key. Each set of
    process-wide settings now has its own process; a turn with another model switches its
    session on the same process."""
    with CursorAgentClient(fake.config()) as client:
        first = client.query("say one", api_key="key-one")
        other_model = client.query("say two", api_key="key-one", model="other-model")
        assert len(_pids(client)) == 1
        other_key = client.query("say three", api_key="key-two")
        pids = _pids(client)
        envs = [Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") for pid in pids]
    assert first.success and other_model.success and other_key.success
    assert len(pids) == 2
    assert sorted(k for env in envs for k in env if k.startswith(b"CURSOR_API_KEY=")) == [
        b"CURSOR_API_KEY=key-one", b"CURSOR_API_KEY=key-two"]
