"""A turn's end as :class:`AgentRun`'s callers see it: ``wait()`` and the done callbacks.

What the clients build on (the sync stream's result, the tool scope's exit, ``run_to_end``):
the callbacks run once, in the order added, after the result is set and the sink closed; a
loop that shuts down under a running turn ends it cancelled for them (its group stopped);
neither can be asked for before ``start()``; a cancelled waiter leaves the turn running. The
agent is the in-memory script transport.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cursor_agent_api import AgentConfig
from cursor_agent_api.protocol import AgentResult
from cursor_agent_api.runtime.run import AgentRun
from cursor_agent_api.runtime.sinks import END, AsyncEventQueue
from cursor_agent_api.testing import Script, ScriptTransport

INIT = {"type": "system", "subtype": "init", "session_id": "8b72ae6d-ab42-4854-991e-6ecf580e66c2"}
RESULT = {"type": "result", "subtype": "success", "result": "ok",
          "session_id": "8b72ae6d-ab42-4854-991e-6ecf580e66c2"}


def _turn(script: Script, sink: Any = None) -> AgentRun:
    config = AgentConfig(result_grace=0.2, kill_grace=0.2)
    return ScriptTransport(script).open_turn(config, "q", sink=sink)


def test_done_callbacks_run_once_in_order_after_the_result_and_the_sink_s_end() -> None:
    async def main() -> tuple[list[tuple[str, Any]], AgentResult]:
        queue = AsyncEventQueue()
        run = _turn(Script([INIT, RESULT]), queue)
        await run.start()
        seen: list[tuple[str, Any]] = []

        def callback(name: str) -> Any:
            def called(fut: asyncio.Future[AgentResult]) -> None:
                items = list(queue._items)
                seen.append((name, (fut.result(), run.result, items[-1] is END)))
            return called

        run.add_done_callback(callback("first"))
        run.add_done_callback(callback("second"))
        result = await run.wait()
        await asyncio.sleep(0)  # (callbacks are called soon after the end)
        return seen, result

    seen, result = asyncio.run(main())
    assert [name for name, _ in seen] == ["first", "second"]
    for _, (value, set_result, ended) in seen:
        assert value is result and set_result is result and ended
    assert result.success and result.result == "ok"


def test_a_loop_shutting_down_under_a_running_turn_ends_it_cancelled() -> None:
    seen: list[bool] = []
    runs: list[AgentRun] = []

    async def main() -> None:
        run = _turn(Script([INIT], hang=True))
        runs.append(run)
        await run.start()
        run.add_done_callback(lambda fut: seen.append(fut.cancelled()))
        # asyncio.run cancels the run's supervisor on the way out

    asyncio.run(main())
    assert seen == [True]
    run = runs[0]
    assert run.result is None and not run.done
    assert run.process is not None and run.process.signals_sent == []  # killed at once
    assert run.process.has_exited


def test_wait_and_done_callbacks_before_start_are_refused() -> None:
    run = _turn(Script([INIT, RESULT]))
    with pytest.raises(RuntimeError, match=r"add_done_callback\(\) before start\(\)"):
        run.add_done_callback(lambda fut: None)
    with pytest.raises(RuntimeError, match=r"wait\(\) before start\(\)"):
        asyncio.run(run.wait())


def test_a_cancelled_waiter_leaves_the_turn_running() -> None:
    async def main() -> tuple[bool, AgentResult]:
        run = _turn(Script([INIT], hang=True))
        await run.start()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(run.wait(), 0.05)
        running = not run.done
        run.cancel()
        return running, await run.wait()

    running, result = asyncio.run(main())
    assert running and result.cancelled and result.exit_code == 143
