"""A sync steering callback (``can_use_tool``, ``on_question``, ``on_plan``) that the
permission timeout or a cancel gave up on runs on, on a daemon thread of its own: it neither
holds the program's exit (a callback waiting on ``input()`` for a person who walked away) nor
takes a worker thread from later callbacks (audit 6, F1: they ran in asyncio's default
executor, ``min(32, cpus + 4)`` threads, which the interpreter joins at exit)."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import threading
from typing import Any

import pytest

from cursor_agent_api.config import AgentConfig
from cursor_agent_api.permissions import Accept, Allow, Answer, Deny
from cursor_agent_api.runtime.acp_steering import Steering
from cursor_agent_api.runtime.daemon_thread import in_daemon_thread

_OPTIONS = [{"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"}]


def _shell(command: str) -> dict[str, Any]:
    return {"sessionId": "s1", "options": _OPTIONS,
            "toolCall": {"toolCallId": command, "kind": "execute", "title": f"`{command}`",
                         "rawInput": {"command": command}}}


_QUESTION = {"toolCallId": "q", "title": "t", "questions": [
    {"id": "q1", "prompt": "Which?", "options": [{"id": "a", "label": "A"}]}]}
_PLAN = {"toolCallId": "p", "name": "Rename", "plan": "# Rename", "todos": []}
_ALLOWED = {"outcome": {"outcome": "selected", "optionId": "allow-once"}}
_REJECTED = {"outcome": {"outcome": "selected", "optionId": "reject-once"}}

_STUCK = 40  # past asyncio's default executor (at most 32 threads) and anyio's limiter (40)


def _steering_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("cursor-agent-api ")]


def test_callbacks_still_answered_after_many_timed_out_ones() -> None:
    release = threading.Event()

    def stuck(_: Any) -> Any:
        release.wait()  # a person who walked away
        return Allow()

    gave_up = AgentConfig(transport="acp", can_use_tool=stuck, on_question=stuck, on_plan=stuck,
                          permission_timeout=0.01)
    answered: list[str] = []

    def fast(request: Any) -> Allow:
        answered.append(request.command)
        return Allow()

    async def main() -> Any:
        timed_out = Steering(gave_up, session_id="s1")
        outcomes = await asyncio.gather(
            *(timed_out.permission(i, _shell(f"echo stuck{i}")) for i in range(_STUCK)),
            timed_out.question(_STUCK, _QUESTION), timed_out.plan(_STUCK + 1, _PLAN))
        assert outcomes[:_STUCK] == [_REJECTED] * _STUCK
        assert outcomes[_STUCK]["outcome"]["outcome"] == "skipped"
        assert outcomes[_STUCK + 1]["outcome"]["outcome"] == "rejected"
        # a later turn, no timeout: its callback runs although the others still block
        later = Steering(AgentConfig(transport="acp", can_use_tool=fast), session_id="s1")
        try:
            # (the bound only ends the old code's wait: it queued behind the stuck ones)
            return await asyncio.wait_for(later.permission(99, _shell("echo fast")), 60)
        except asyncio.TimeoutError:
            return "the callback was not run while the timed-out ones still block"
        finally:
            release.set()

    try:
        assert asyncio.run(main()) == _ALLOWED
        assert answered == ["echo fast"]
    finally:
        release.set()
        for thread in _steering_threads():
            thread.join()


def test_a_cancel_abandons_the_waiting_callback() -> None:
    release, entered = threading.Event(), threading.Event()

    def stuck(_: Any) -> Allow:
        entered.set()
        release.wait()
        return Allow()

    async def main() -> tuple[Any, list[bool]]:
        steering = Steering(AgentConfig(transport="acp", can_use_tool=stuck), session_id="s1")
        asked = asyncio.ensure_future(steering.permission(0, _shell("rm -rf build")))
        await asyncio.to_thread(entered.wait)
        steering.cancel_pending()
        try:
            return await asked, [t.daemon for t in _steering_threads()]
        finally:
            release.set()

    try:
        # answered at once; the callback, still blocked, on a daemon thread of its own
        assert asyncio.run(main()) == ({"outcome": {"outcome": "cancelled"}}, [True])
    finally:
        release.set()
        for thread in _steering_threads():
            thread.join()


# A script whose sync callback never returns: its process must end once the answer is sent.
_SCRIPT = r"""
import asyncio, json, sys, threading
from cursor_agent_api.config import AgentConfig
from cursor_agent_api.runtime.acp_steering import Steering
from cursor_agent_api.runtime.daemon_thread import in_daemon_thread

how, params = sys.argv[1], json.loads(sys.argv[2])
entered = threading.Event()

def forever(_):
    entered.set()
    threading.Event().wait()  # input() with nobody there

async def main():
    cfg = AgentConfig(transport="acp", can_use_tool=forever, on_question=forever,
                      on_plan=forever, permission_timeout=0.05 if how == "timeout" else None)
    steering = Steering(cfg, session_id="s1")
    asked = asyncio.ensure_future(steering.permission(0, params))
    if how == "cancel":
        await asyncio.to_thread(entered.wait)
        steering.cancel_pending()
    print(json.dumps(await asked), flush=True)

asyncio.run(main())
print("exiting", flush=True)
"""


@pytest.mark.parametrize("how", ["timeout", "cancel"])
def test_the_program_exits_while_an_abandoned_callback_still_blocks(how: str) -> None:
    try:
        done = subprocess.run([sys.executable, "-c", _SCRIPT, how, json.dumps(_shell("ls"))],
                              capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the process did not exit (output so far: {exc.stdout!r})")
    answer = _REJECTED if how == "timeout" else {"outcome": {"outcome": "cancelled"}}
    assert done.stdout.splitlines() == [json.dumps(answer), "exiting"], done.stderr
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("callback", ["can_use_tool", "on_question", "on_plan"])
@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_an_exception_in_a_callback_is_logged_with_its_traceback(
        callback: str, flavour: str, caplog: pytest.LogCaptureFixture) -> None:
    def boom(_: Any) -> Any:
        raise KeyError("the answer")

    async def aboom(_: Any) -> Any:
        raise KeyError("the answer")

    steering = Steering(AgentConfig(transport="acp", **{callback: boom if flavour == "sync"
                                                        else aboom}), session_id="s1")
    ask = {"can_use_tool": lambda: steering.permission(0, _shell("ls")),
           "on_question": lambda: steering.question(0, _QUESTION),
           "on_plan": lambda: steering.plan(0, _PLAN)}[callback]
    with caplog.at_level(logging.WARNING, logger="cursor_agent_api.runtime.acp_steering"):
        outcome = asyncio.run(ask())
    assert outcome in (_REJECTED, {"outcome": {"outcome": "rejected", "reason":
                                               "on_plan raised KeyError: 'the answer'"}},
                       {"outcome": {"outcome": "skipped", "reason":
                                    "on_question raised KeyError: 'the answer'"}})
    [record] = [r for r in caplog.records if r.name == "cursor_agent_api.runtime.acp_steering"]
    assert record.getMessage() == f"{callback} raised KeyError: 'the answer'"
    assert record.exc_info is not None and record.exc_info[0] is KeyError


def test_answers_that_raise_nothing_are_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    cfg = AgentConfig(transport="acp", can_use_tool=lambda r: Deny("no"),
                      on_question=lambda q: Answer("a"), on_plan=lambda p: Accept())
    steering = Steering(cfg, session_id="s1")

    async def main() -> None:
        await steering.permission(0, _shell("ls"))
        await steering.question(1, _QUESTION)
        await steering.plan(2, _PLAN)

    with caplog.at_level(logging.DEBUG, logger="cursor_agent_api.runtime.acp_steering"):
        asyncio.run(main())
    assert not [r for r in caplog.records if r.name == "cursor_agent_api.runtime.acp_steering"]


_EXITING = """
import asyncio, json, sys
from cursor_agent_api import AgentConfig, AsyncCursorAgentClient, CursorAgentClient
face, flavour, callback, name, fields = sys.argv[1:5] + [json.loads(sys.argv[5])]
error = {"SystemExit": SystemExit(3), "KeyboardInterrupt": KeyboardInterrupt()}[name]

def fail(_):
    raise error

async def afail(_):
    raise error

config = AgentConfig(transport="acp", **fields, **{callback: fail if flavour == "sync" else afail})
prompt = "run ls" if callback == "can_use_tool" else "ask"
if face == "sync":
    with CursorAgentClient(config) as client:
        result = client.query(prompt)
else:
    async def main():
        async with AsyncCursorAgentClient(config) as client:
            return await client.query(prompt)
    result = asyncio.run(main())
print(json.dumps([result.success, result.result]))
"""


@pytest.mark.parametrize(("face", "flavour"), [("sync", "sync"), ("async", "sync"),
                                               ("async", "async")])
@pytest.mark.parametrize(("callback", "name"), [("can_use_tool", "SystemExit"),
                                                ("on_question", "KeyboardInterrupt")])
def test_a_callback_raising_system_exit_is_a_failed_callback_on_both_faces(
        fake: Any, face: str, flavour: str, callback: str, name: str) -> None:
    # audit 13: the sync face's loop thread died (a cascade of errors, exit 1) while the async
    # face exited with the code; both now count it as a failed callback, as an exception
    fields = {"agent_binary": str(fake.binary), "workspace": str(fake.workspace),
              "env": {"FAKE_ACP_DIR": str(fake.state)}, "timeout": 60.0, "kill_grace": 1.0}
    try:
        done = subprocess.run([sys.executable, "-c", _EXITING, face, flavour, callback, name,
                               json.dumps(fields)], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the process did not exit (output so far: {exc.stdout!r})")
    assert done.returncode == 0, done.stderr
    said = f"{callback} raised {name}: 3" if name == "SystemExit" else f"{callback} raised {name}"
    expected = ("ls was not allowed (reject-once)" if callback == "can_use_tool"
                else json.dumps({"outcome": "skipped", "reason": said}))
    success, text = json.loads(done.stdout.splitlines()[-1])
    assert success and expected in text, done.stdout
    assert "Traceback" not in done.stderr or said in done.stderr, done.stderr


@pytest.mark.parametrize("callback", ["can_use_tool", "on_question", "on_plan"])
@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_callback_raising_stop_iteration_is_a_failed_callback(
        callback: str, flavour: str, caplog: pytest.LogCaptureFixture) -> None:
    # audit 17, finding 1: a sync callback's StopIteration (next() over no match) could not be
    # set on the future its thread settles (asyncio refuses it): the request, and so the
    # turn, waited for ever. It fails the callback, as any exception does, logged.
    def stop(_: Any) -> Any:
        return next(iter(()))

    async def astop(_: Any) -> Any:
        return next(iter(()))

    steering = Steering(AgentConfig(transport="acp", **{callback: stop if flavour == "sync"
                                                        else astop}), session_id="s1")
    ask = {"can_use_tool": lambda: steering.permission(0, _shell("ls")),
           "on_question": lambda: steering.question(0, _QUESTION),
           "on_plan": lambda: steering.plan(0, _PLAN)}[callback]

    async def main() -> Any:
        return await asyncio.wait_for(ask(), 60)  # (never reached but by the bug)

    with caplog.at_level(logging.WARNING, logger="cursor_agent_api.runtime.acp_steering"):
        outcome = asyncio.run(main())
    said = {"sync": "RuntimeError: function raised StopIteration",
            "async": "RuntimeError: coroutine raised StopIteration"}[flavour]
    assert outcome in (_REJECTED, {"outcome": {"outcome": "rejected",
                                               "reason": f"on_plan raised {said}"}},
                       {"outcome": {"outcome": "skipped",
                                    "reason": f"on_question raised {said}"}})
    [record] = [r for r in caplog.records if r.name == "cursor_agent_api.runtime.acp_steering"]
    assert record.getMessage() == f"{callback} raised {said}"
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError
    assert isinstance(record.exc_info[1].__cause__, StopIteration)  # (the traceback shows it)


def test_in_daemon_thread_hands_a_stop_iteration_on() -> None:
    async def main() -> Any:
        return await asyncio.wait_for(in_daemon_thread(lambda: next(iter(())), "stop"), 60)

    with pytest.raises(RuntimeError, match="function raised StopIteration") as raised:
        asyncio.run(main())
    assert isinstance(raised.value.__cause__, StopIteration)


@pytest.mark.parametrize("callback", ["can_use_tool", "on_question", "on_plan"])
@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_callback_raising_cancelled_error_is_a_failed_callback(
        callback: str, flavour: str, caplog: pytest.LogCaptureFixture) -> None:
    # audit 17, finding 4: a CancelledError the callback raised itself (nothing cancelled the
    # request) went through as if the request were cancelled: no answer of the client's, no
    # log. It fails the callback, as any exception does, logged.
    def cancelled(_: Any) -> Any:
        raise asyncio.CancelledError()

    async def acancelled(_: Any) -> Any:
        raise asyncio.CancelledError()

    steering = Steering(AgentConfig(transport="acp", **{callback: cancelled if flavour == "sync"
                                                        else acancelled}), session_id="s1")
    ask = {"can_use_tool": lambda: steering.permission(0, _shell("ls")),
           "on_question": lambda: steering.question(0, _QUESTION),
           "on_plan": lambda: steering.plan(0, _PLAN)}[callback]
    with caplog.at_level(logging.WARNING, logger="cursor_agent_api.runtime.acp_steering"):
        outcome = asyncio.run(ask())
    assert outcome in (_REJECTED, {"outcome": {"outcome": "rejected",
                                               "reason": "on_plan raised CancelledError"}},
                       {"outcome": {"outcome": "skipped",
                                    "reason": "on_question raised CancelledError"}})
    [record] = [r for r in caplog.records if r.name == "cursor_agent_api.runtime.acp_steering"]
    assert record.getMessage() == f"{callback} raised CancelledError"
    assert record.exc_info is not None and record.exc_info[0] is asyncio.CancelledError
