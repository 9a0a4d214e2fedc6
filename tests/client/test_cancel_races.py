"""A cancellation that lands as a wait ends is never lost.

On Python < 3.12 ``asyncio.wait_for`` returns the inner result when the outer task is
cancelled in the same loop iteration in which the inner wait completed (bpo-42130): the
cancellation is swallowed. A supervisor loop (``AgentRun._supervise``) or a notifier loop
that swallows the one cancel ``asyncio.run`` sends at shutdown never ends, and the
program hangs at exit. These tests put the cancel exactly there.
"""

from __future__ import annotations

import asyncio

from cursor_agent_api.config import AgentConfig
from cursor_agent_api.runtime.run import AgentRun


async def _cancels_kept(make_waiter, wake) -> list[bool]:
    """For each point just after ``wake()`` completes the wait (0, 1, 2 loop iterations
    later): start ``make_waiter()``, wake it, cancel it there. Whenever the cancel is
    accepted (the task had not ended yet), whether the task then ended cancelled."""
    kept = []
    for hops in range(3):
        task = asyncio.ensure_future(make_waiter())
        for _ in range(3):
            await asyncio.sleep(0)  # the task now waits
        wake()
        for _ in range(hops):
            await asyncio.sleep(0)
        if not task.cancel():
            continue  # it had ended: nothing to lose
        try:
            await task
        except asyncio.CancelledError:
            kept.append(True)
        else:
            kept.append(False)
    return kept


def test_a_run_supervisor_sleep_keeps_a_cancel_that_lands_as_it_wakes() -> None:
    async def main() -> list[bool]:
        run = AgentRun(AgentConfig(), "hi")
        loop = asyncio.get_running_loop()
        run._loop, run._wake = loop, asyncio.Event()
        wake = run._wake
        return await _cancels_kept(lambda: run._sleep(loop.time() + 60), wake.set)

    kept = asyncio.run(main())
    assert kept and all(kept), kept


def test_the_sleep_still_wakes_at_its_deadline_and_on_a_poke() -> None:
    async def main() -> tuple[float, float]:
        run = AgentRun(AgentConfig(), "hi")
        loop = asyncio.get_running_loop()
        run._loop, run._wake = loop, asyncio.Event()
        t0 = loop.time()
        await run._sleep(t0 + 0.05)
        slept = loop.time() - t0
        loop.call_later(0.01, run._wake.set)
        t1 = loop.time()
        await run._sleep(t1 + 60)
        return slept, loop.time() - t1

    slept, poked = asyncio.run(main())
    assert 0.04 <= slept < 30 and poked < 30


def test_an_acp_request_with_a_timeout_keeps_a_cancel_that_lands_as_the_answer_comes() -> None:
    from cursor_agent_api.runtime.acp_connection import AcpConnection

    async def main() -> list[bool]:
        conn = AcpConnection(["sleep", "60"], env=None, cwd=None)
        await conn.start()
        try:
            def answer() -> None:
                for _, future in list(conn._pending.values()):
                    if not future.done():
                        future.set_result({"ok": True})

            return await _cancels_kept(lambda: conn.request("m", {}, timeout=60), answer)
        finally:
            await conn.close()

    kept = asyncio.run(main())
    assert kept and all(kept), kept


def test_a_start_cancelled_right_after_the_spawn_leaves_no_process(tmp_path) -> None:
    """Ctrl-C can land while the spawn connects the agent's stdout, once the process runs:
    the start is cancelled before the run knows its process, and nothing would ever stop it.
    The spawn is undone there (the group killed) before the cancel goes on."""
    from cursor_agent_api.runtime import process as process_module
    from cursor_agent_api.runtime.groups import group_alive

    agent = tmp_path / "agent"
    agent.write_text("#!/bin/sh\nexec sleep 30\n")
    agent.chmod(0o755)
    pgids: list[int] = []
    alive_as_cancelled: list[bool] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        connect = loop.connect_read_pipe

        async def connect_read_pipe(protocol_factory, pipe):  # type: ignore[no-untyped-def]
            if not isinstance(protocol_factory(), process_module._StdoutProtocol):
                return await connect(protocol_factory, pipe)  # the owner guard's status pipe
            loop.connect_read_pipe = connect  # type: ignore[method-assign]
            pgids.extend(proc.pgid for proc in process_module._RUNNING)  # the agent runs
            raise asyncio.CancelledError  # the cancel lands here

        loop.connect_read_pipe = connect_read_pipe  # type: ignore[method-assign]
        try:
            run = AgentRun(AgentConfig(agent_binary=str(agent)), "hi")
            try:
                await run.start()
            except asyncio.CancelledError:
                pass
            else:  # pragma: no cover - the test's premise
                raise AssertionError("the start was not cancelled")
            alive_as_cancelled.append(group_alive(pgids[0]))  # gone before the cancel goes on
        finally:
            loop.connect_read_pipe = connect  # type: ignore[method-assign]

    asyncio.run(main())
    assert len(pgids) == 1
    try:
        assert alive_as_cancelled == [False], "the cancel went on before the agent was gone"
    finally:
        import os
        import signal
        if group_alive(pgids[0]):
            os.killpg(pgids[0], signal.SIGKILL)
