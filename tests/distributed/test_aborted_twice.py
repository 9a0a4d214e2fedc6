"""A job aborted again while its run is being stopped does not end before its run.

A user's cancel aborts a job; the worker asks its run to stop and waits for it (the cancel's
wait, up to 15 s for an agent that does not end; then the run itself). If the worker is
stopping meanwhile and its grace ends, Procrastinate aborts the same job again. That second
abort used to end the job while its run went on: Procrastinate's stop, then the worker's
cleanup (its store closed under the run) went ahead, and a further signal only said
"finishing cleanup", never stopping the run (review 8 of the worker). Now the second abort
stops every run at once, as a second signal does, and the job ends once its run has.

In process, without a database: the worker's own ``_job`` with the run, the cancel and the
stop of the runs replaced by stand-ins that say what they are asked."""

from __future__ import annotations

import asyncio
import gc
from types import SimpleNamespace
from typing import Any

import pytest
from procrastinate.job_context import AbortReason

from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.worker import Worker, WorkerSettings

WITHIN = 60.0
"""A failure's limit only: each step is waited for by what it says."""


@pytest.mark.parametrize("window", ["the cancel's wait", "the wait for the run"])
def test_a_second_abort_stops_the_run_and_the_job_ends_after_it(window: str) -> None:
    url = "postgresql+asyncpg://u@127.0.0.1/db"  # (nothing is connected to)
    worker = Worker(WorkerSettings(server=ServerSettings(database_url=url)))
    reason = [AbortReason.USER_REQUEST]
    context = SimpleNamespace(job=SimpleNamespace(id=1, worker_id=1), abort_reason=lambda: reason[0])

    async def main() -> None:
        running, cancelled, ended = asyncio.Event(), asyncio.Event(), asyncio.Event()
        shutdowns: list[str] = []

        async def execute(context: Any, run_id: str, stop: Any) -> str:  # its agent ignores the cancel
            running.set()
            await ended.wait()
            return "interrupted"

        async def cancel(run_id: str, *, wait: float = 15.0) -> None:
            cancelled.set()
            if window == "the cancel's wait":
                await ended.wait()  # (the run is not marked within the wait)

        async def shutdown() -> None:  # every run stopped now: this one ends
            shutdowns.append("shutdown")
            ended.set()

        worker._execute = execute  # type: ignore[method-assign]
        worker.runs.cancel = cancel  # type: ignore[method-assign]
        worker.runs.shutdown = shutdown  # type: ignore[method-assign]
        job = asyncio.create_task(worker._job(context, "r1"))
        await asyncio.wait_for(running.wait(), WITHIN)
        job.cancel()  # a user's cancel: Procrastinate aborts the job
        await asyncio.wait_for(cancelled.wait(), WITHIN)
        assert not job.done()
        worker.stop()  # SIGTERM: the drain (Procrastinate's worker is not part of this test)
        reason[0] = AbortReason.SHUTDOWN
        job.cancel()  # the grace is over: Procrastinate's stop aborts its running jobs
        done, _ = await asyncio.wait([job], timeout=WITHIN)
        assert done, "the job did not end"
        assert job.cancelled()  # the job ends "aborted"
        assert ended.is_set() and shutdowns == ["shutdown"]  # its run was stopped, and ended first
        assert worker._shutdown is not None
        await worker._shutdown  # what run() awaits before its cleanup
        assert worker._stops == {}
        for task in list(worker._tasks):  # the drain's poll of cancels
            task.cancel()
        await asyncio.gather(*worker._tasks, return_exceptions=True)

    asyncio.run(main())


def test_a_run_that_fails_as_a_users_cancel_stops_it_leaves_no_unretrieved_error() -> None:
    """The run's body raises after a user's cancel (its failure logged by the worker, the job
    ends aborted): its exception is retrieved, not left to asyncio's "Task exception was
    never retrieved" as the task is collected (review 11)."""
    url = "postgresql+asyncpg://u@127.0.0.1/db"  # (nothing is connected to)
    worker = Worker(WorkerSettings(server=ServerSettings(database_url=url)))
    context = SimpleNamespace(job=SimpleNamespace(id=1, worker_id=1),
                              abort_reason=lambda: AbortReason.USER_REQUEST)
    unhandled: list[dict[str, Any]] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: unhandled.append(ctx))
        running, stopped = asyncio.Event(), asyncio.Event()

        async def execute(context: Any, run_id: str, stop: Any) -> str:
            running.set()
            await stopped.wait()
            raise RuntimeError("the run failed as it was stopped")

        async def cancel(run_id: str, *, wait: float = 15.0) -> None:
            stopped.set()

        worker._execute = execute  # type: ignore[method-assign]
        worker.runs.cancel = cancel  # type: ignore[method-assign]
        job = asyncio.create_task(worker._job(context, "r1"))
        await asyncio.wait_for(running.wait(), WITHIN)
        job.cancel()  # a user's cancel
        done, _ = await asyncio.wait([job], timeout=WITHIN)
        assert done and job.cancelled()  # the job ends "aborted"
        del job, done
        gc.collect()  # the run's task is collected: an unretrieved error is reported now

    asyncio.run(main())
    assert unhandled == [], [ctx.get("message") for ctx in unhandled]
