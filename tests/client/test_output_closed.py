"""An agent that closes stdout and stderr but does not exit (audit 4): no more output can come,
so the turn does not wait for it forever. ``result_grace`` seconds after both pipes ended
without a result, its process group is stopped (SIGTERM, SIGKILL after ``kill_grace``) and the
turn fails with an ``AgentProcessError`` that says what happened (code ``output_closed``).
A turn whose agent wrote its result before closing its output is unchanged: that result wins.

The fake agents below sleep 20 s then exit, so that on a runtime without the rule the test
fails (with the agent's exit, "without a result event") instead of hanging.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import AgentProcessError, CursorAgentClient, UsageLimitError
from cursor_agent_api.config import AgentConfig
from cursor_agent_api.protocol import EventType
from cursor_agent_api.runtime.stop_policy import StopReason

SESSION = "0ed36493-01b3-4744-b712-a8eabfff89e1"

CLOSER = f"""\
import json, os, signal, sys, time
sys.stdin.read()
if os.environ.get("CLOSER_IGNORE_TERM") == "1":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(json.dumps({{"type": "system", "subtype": "init", "session_id": "{SESSION}",
                  "model": "m"}}), flush=True)
if os.environ.get("CLOSER_RESULT") == "1":
    print(json.dumps({{"type": "result", "subtype": "success", "is_error": False,
                      "result": "done", "session_id": "{SESSION}"}}), flush=True)
os.close(1)
os.close(2)
time.sleep(20)
"""


def _closer(tmp_path: Path, **env: str) -> AgentConfig:
    agent = tmp_path / "closer_agent"
    agent.write_text(f"#!{sys.executable}\n{CLOSER}")
    agent.chmod(0o755)
    return AgentConfig(agent_binary=str(agent), result_grace=0.3, kill_grace=0.5, env=env,
                       workspace=str(tmp_path))


@pytest.mark.parametrize("ignore_term", [False, True], ids=["obeys-sigterm", "ignores-sigterm"])
def test_a_closed_output_without_a_result_ends_the_turn(
    tmp_path: Path, run_stream: Any, ignore_term: bool
) -> None:
    config = _closer(tmp_path, CLOSER_IGNORE_TERM="1" if ignore_term else "0")
    turn = run_stream(config, "hi")
    result = turn.result
    assert not result.success
    assert isinstance(result.exception, AgentProcessError)
    message = str(result.exception)
    assert "closed its output (stdout and stderr) without a result but did not exit" in message
    assert "process group was stopped 0.3 s later" in message
    assert result.exit_code == (137 if ignore_term else 143)
    codes = [e.data.get("code") for e in turn.events if e.type is EventType.ERROR]
    assert codes == ["output_closed"]
    assert turn.types()[0] == "system:init"
    assert turn.events[-1].type is EventType.RESULT_ERROR


def test_query_reports_the_closed_output(tmp_path: Path, run_query: Any) -> None:
    result = run_query(_closer(tmp_path), "hi")
    assert isinstance(result.exception, AgentProcessError)
    assert "did not exit" in str(result.exception) and result.session_id == SESSION


@pytest.mark.parametrize(("result", "reason", "success"), [
    ("0", StopReason.OUTPUT_CLOSED, False), ("1", StopReason.AFTER_RESULT, True)])
def test_the_stop_reason(tmp_path: Path, result: str, reason: str, success: bool) -> None:
    from cursor_agent_api.runtime.run import AgentRun

    config = _closer(tmp_path, CLOSER_RESULT=result)

    async def main() -> tuple[str | None, Any]:
        run = AgentRun(config, "hi", argv=[config.agent_binary], env=None)
        await run.start()
        outcome = await run.wait()
        return run.stop_reason, outcome

    stop_reason, outcome = asyncio.run(main())
    assert stop_reason == reason
    assert outcome.success is success and outcome.exit_code == 143


def test_a_result_then_a_closed_output_is_unchanged(tmp_path: Path, run_stream: Any) -> None:
    """The result came first: it is the turn's outcome; the lingering agent is stopped after
    result_grace as before (reason after_result), and no error is added."""
    turn = run_stream(_closer(tmp_path, CLOSER_RESULT="1"), "hi")
    assert turn.result.success and turn.result.result == "done"
    assert [e for e in turn.events if e.type is EventType.ERROR] == []


def test_on_uvloop_too(tmp_path: Path) -> None:
    """uvicorn runs the server on uvloop, whose spawn (libuv's) left copies of the agent's
    own stdout in the agent: closing fd 1 did not end its output, and the turn never ended.
    The owner guard closes them before the agent's exec (tests/client/test_agent_descriptors.py)."""
    uvloop = pytest.importorskip("uvloop")
    from cursor_agent_api import AsyncCursorAgentClient

    loop = uvloop.new_event_loop()
    try:
        result = loop.run_until_complete(AsyncCursorAgentClient(_closer(tmp_path)).query("hi"))
    finally:
        loop.close()
    assert isinstance(result.exception, AgentProcessError)
    assert "did not exit" in str(result.exception)


@pytest.mark.parametrize("text_mode", [True, False], ids=["text", "stream-json"])
def test_an_agent_exiting_with_no_grace_is_judged_by_its_exit(tmp_path: Path, text_mode: bool) -> None:
    """``result_grace=0``: its pipes' end is seen before its exit is, so the stop comes at once,
    to an agent exiting by itself (review 38: 17 of 20 text turns that exited 0 failed
    "closed its output … did not exit", and a usage limit's typed error was lost). Its own
    exit says how the turn ended."""
    agent = tmp_path / "agent"
    body = ("print('the answer')\n" if text_mode else
            "sys.stderr.write(\"Error: You've hit your usage limit for this month\\n\")\n"
            "sys.exit(1)\n")
    agent.write_text(f"#!{sys.executable}\nimport sys\nsys.stdin.read()\n{body}")
    agent.chmod(0o755)
    config = AgentConfig(agent_binary=str(agent), result_grace=0, workspace=str(tmp_path),
                         output_format="text" if text_mode else "stream-json")
    for _ in range(10):  # (the race it had was lost most of the time: 17 of 20)
        result = CursorAgentClient(config).query("hi")
        if text_mode:
            assert result.success and result.result.strip() == "the answer", result.exception
        else:
            assert isinstance(result.exception, UsageLimitError), result.exception


@pytest.mark.parametrize("by_name", [False, True], ids=["by-path", "by-name-on-path"])
def test_the_error_names_the_binary_started_and_no_stderr_remedy(
    tmp_path: Path, by_name: bool
) -> None:
    """The message names the agent actually started (``agent_binary`` as resolved on
    ``PATH``), not ``agent`` (wrong with --simulate or a custom binary), and carries no
    "see the stderr tail" remedy: the agent closed its stderr, there is none to see."""
    config = _closer(tmp_path)
    started = config.agent_binary
    if by_name:
        config = config.with_overrides(
            agent_binary="closer_agent",
            env={**config.env, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"})
    result = CursorAgentClient(config).query("hi")
    exc = result.exception
    assert type(exc) is AgentProcessError
    for text in (str(exc), exc.cli_message()):
        assert repr(started) in text, text
        assert "stderr" not in text.split("did not exit", 1)[1], text
        assert "`agent --version`" not in text, text
