"""A queued run whose job is over (cancelled, failed, aborted, gone) is not stranded: the
sweep gives it a new job (or ends it, when a cancel reached its job, or after
``MAX_JOBS`` jobs), and ``cancel()`` marks it cancelled. In-process dispatcher and worker,
on PostgreSQL."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from procrastinate.jobs import Status

from cursor_agent_api.server.dispatch import CancelNotAppliedError
from cursor_agent_api.server.dispatch.queue import MAX_JOBS, QueueDispatcher
from cursor_agent_api.server.hub import Hub
from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.store import Store

Body = Callable[[QueueDispatcher, Store, dict[str, Any]], Awaitable[Any]]



def _settings(db_url: str, tmp_path: Path) -> ServerSettings:
    return ServerSettings(
        token="t" * 16, database_url=db_url, roots=(tmp_path,), dispatch="queue", simulate=True
    )


def _run(db_url: str, tmp_path: Path, body: Body) -> Any:
    async def main() -> Any:
        store = Store(db_url)
        await store.start()
        dispatcher = QueueDispatcher(_settings(db_url, tmp_path), store, Hub())
        try:
            async with dispatcher.app.open_async():
                chat = await store.create_chat(
                    workspace=str(tmp_path), model=None, options={"trust": True}, title="t"
                )
                return await body(dispatcher, store, chat)
        finally:
            await store.close()

    return asyncio.run(main())


async def _jobs(dispatcher: QueueDispatcher) -> list[tuple[int, str, str]]:
    """``(id, queue, status)`` of every job, in order."""
    listed = await dispatcher.app.job_manager.list_jobs_async()
    return sorted((int(j.id), str(j.queue), str(j.status)) for j in listed)


async def _end_job(dispatcher: QueueDispatcher, store: Store, run_id: str, *, abort: bool) -> None:
    """End the run's job without a worker taking the run (``abort``: as a cancel does)."""
    run = await store.get_run(run_id)
    assert run is not None and run["job_id"] is not None
    assert await dispatcher.app.job_manager.cancel_job_by_id_async(int(run["job_id"]), abort=abort)


async def _next_prompt(dispatcher: QueueDispatcher, chat: dict[str, Any]) -> str:
    from cursor_agent_api.server.store import ActiveRunError

    try:
        await dispatcher.submit(chat, "next")
    except ActiveRunError:
        return "refused"
    return "accepted"


def test_a_move_off_a_dead_worker_that_fails_halfway_is_completed_by_the_next_sweep(
    db_url: str, tmp_path: Path
) -> None:
    async def body(dispatcher: QueueDispatcher, store: Store, chat: dict[str, Any]) -> Any:
        run = await dispatcher.submit(chat, "hello")
        # It waits in the affinity queue of worker w1, whose heartbeats stopped (no such worker).
        await store.update_run(run["id"], queue="worker.w1", worker="w1", worker_id=999999)
        real = dispatcher.app.configure_task
        calls = {"n": 0}

        def flaky(*args: Any, **kwargs: Any) -> Any:
            deferrer = real(*args, **kwargs)
            calls["n"] += 1
            if calls["n"] == 1:  # the database goes away between the cancel and the new job

                async def boom(**_: Any) -> int:
                    raise ConnectionError("server closed the connection unexpectedly")

                deferrer.defer_async = boom
            return deferrer

        dispatcher.app.configure_task = flaky  # type: ignore[method-assign]
        with pytest.raises(ConnectionError):
            await dispatcher.sweep()
        halfway = await store.get_run(run["id"]), await _jobs(dispatcher)
        for _ in range(3):  # later sweeps: repaired once, then nothing more to do
            await dispatcher.sweep()
        return run, halfway, await store.get_run(run["id"]), await _jobs(dispatcher)

    _, (halfway, jobs_halfway), after, jobs = _run(db_url, tmp_path, body)
    assert halfway["status"] == "queued" and [j[2] for j in jobs_halfway] == ["cancelled"]
    assert after["status"] == "queued"
    first, second = jobs  # one new job, not one per sweep
    assert first[2] == "cancelled"
    assert second[1:] == ("runs", "todo"), "a live job on the shared queue carries it"
    assert after["job_id"] == second[0] and after["queue"] == "runs"
    assert after["worker"] is None and after["worker_id"] is None


def test_a_run_a_worker_claims_while_the_sweep_moves_it_keeps_its_worker(db_url: str, tmp_path: Path) -> None:
    async def body(dispatcher: QueueDispatcher, store: Store, chat: dict[str, Any]) -> Any:
        run = await dispatcher.submit(chat, "hello")
        await store.update_run(run["id"], queue="worker.w1", worker="w1", worker_id=999999)
        real = dispatcher.app.configure_task
        claimed: dict[str, Any] = {}

        def racing(*args: Any, **kwargs: Any) -> Any:
            deferrer = real(*args, **kwargs)
            defer = deferrer.defer_async

            async def defer_and_claim(**kw: Any) -> int:
                job_id = int(await defer(**kw))
                # A worker takes the new job at once, before the sweep records it in the run.
                taken = await store.claim_run(run["id"], worker="w2", worker_id=7, job_id=job_id)
                claimed.update(taken or {})
                return job_id

            deferrer.defer_async = defer_and_claim
            return deferrer

        dispatcher.app.configure_task = racing  # type: ignore[method-assign]
        await dispatcher.sweep()
        return claimed, await store.get_run(run["id"])

    claimed, after = _run(db_url, tmp_path, body)
    assert claimed["status"] == "running"
    assert (after["status"], after["worker"], after["worker_id"]) == ("running", "w2", 7), "the claim stands"
    assert after["job_id"] == claimed["job_id"]


def test_a_run_whose_job_id_was_never_recorded_and_whose_job_is_over_gets_a_new_job(
    db_url: str, tmp_path: Path
) -> None:
    async def body(dispatcher: QueueDispatcher, store: Store, chat: dict[str, Any]) -> Any:
        run = await dispatcher.submit(chat, "hello")
        stored = await store.get_run(run["id"])
        assert stored is not None
        # The API server's write of the job's id failed after the job was deferred; then a
        # worker's claim failed, too: the job is over.
        await store.update_run(run["id"], job_id=None)
        assert await dispatcher.app.job_manager.cancel_job_by_id_async(int(stored["job_id"]), abort=False)
        await dispatcher.sweep()
        return await store.get_run(run["id"]), await _jobs(dispatcher)

    after, jobs = _run(db_url, tmp_path, body)
    assert [j[2] for j in jobs] == ["cancelled", "todo"]
    assert after["status"] == "queued" and after["job_id"] == jobs[1][0]


def test_cancel_marks_a_queued_run_whose_job_is_over_cancelled(db_url: str, tmp_path: Path) -> None:
    async def body(dispatcher: QueueDispatcher, store: Store, chat: dict[str, Any]) -> Any:
        run = await dispatcher.submit(chat, "hello")
        # Its job ended without a worker taking the run (a half-done move, a failed claim).
        await _end_job(dispatcher, store, run["id"], abort=False)
        await dispatcher.cancel(run["id"], wait=5)
        after = await store.get_run(run["id"])
        records = await store.events_after(chat["id"], 0, 10)
        return after, [(e.type, e.subtype) for e in records], await _next_prompt(dispatcher, chat)

    after, records, next_prompt = _run(db_url, tmp_path, body)
    assert after["status"] == "cancelled"
    assert records == [("run", "queued"), ("run", "cancelled")]
    assert next_prompt == "accepted"


def test_cancel_of_a_run_the_sweep_gave_a_new_job_cancels_that_job(db_url: str, tmp_path: Path) -> None:
    async def body(dispatcher: QueueDispatcher, store: Store, chat: dict[str, Any]) -> Any:
        run = await dispatcher.submit(chat, "hello")
        await _end_job(dispatcher, store, run["id"], abort=False)
        await dispatcher.sweep()  # a new job
        await dispatcher.cancel(run["id"], wait=5)
        return await store.get_run(run["id"]), await _jobs(dispatcher), await _next_prompt(dispatcher, chat)

    after, jobs, next_prompt = _run(db_url, tmp_path, body)
    assert after["status"] == "cancelled"
    assert [j[2] for j in jobs][:2] == ["cancelled", "cancelled"], "no job is left to take it"
    assert next_prompt == "accepted"


def test_cancel_follows_the_run_to_the_job_a_sweep_gave_it_meanwhile(db_url: str, tmp_path: Path) -> None:
    async def body(dispatcher: QueueDispatcher, store: Store, chat: dict[str, Any]) -> Any:
        run = await dispatcher.submit(chat, "hello")
        await _end_job(dispatcher, store, run["id"], abort=False)
        jobs = dispatcher.app.job_manager
        real_cancel = jobs.cancel_job_by_id_async
        raced = {"done": False}

        async def cancel_then_race(job_id: int, **kwargs: Any) -> bool:
            cancelled = bool(await real_cancel(job_id, **kwargs))
            if not raced["done"]:
                raced["done"] = True
                # Meanwhile another API server's sweep gives the run a new job, which a worker takes.
                await dispatcher.sweep()
                fresh = await store.get_run(run["id"])
                assert fresh is not None
                await store.claim_run(run["id"], worker="w2", worker_id=7, job_id=fresh["job_id"])
            return cancelled

        jobs.cancel_job_by_id_async = cancel_then_race  # type: ignore[method-assign]
        # No worker applies it here: the cancel says so when its wait runs out.
        with pytest.raises(CancelNotAppliedError) as pending:
            await dispatcher.cancel(run["id"], wait=0.5)
        assert pending.value.status == "running"
        return await _jobs(dispatcher), await store.get_run(run["id"])

    jobs, after = _run(db_url, tmp_path, body)
    assert after["status"] == "running", "its worker records the end"
    assert [j[2] for j in jobs] == ["cancelled", "cancelled"], "the cancel reached the new job"


def test_a_queued_run_whose_job_a_cancel_reached_is_ended_cancelled_not_run_again(
    db_url: str, tmp_path: Path
) -> None:
    async def body(dispatcher: QueueDispatcher, store: Store, chat: dict[str, Any]) -> Any:
        run = await dispatcher.submit(chat, "hello")
        # A cancel reached the job (abort requested), but the run was never marked (the API
        # server stopped right then): the person's cancel wins over a new job.
        await _end_job(dispatcher, store, run["id"], abort=True)
        await dispatcher.sweep()
        return await store.get_run(run["id"]), await _jobs(dispatcher)

    after, jobs = _run(db_url, tmp_path, body)
    assert after["status"] == "cancelled"
    assert [j[2] for j in jobs] == ["cancelled"], "no new job"


def test_a_run_whose_jobs_keep_ending_without_it_fails_after_max_jobs(db_url: str, tmp_path: Path) -> None:
    async def body(dispatcher: QueueDispatcher, store: Store, chat: dict[str, Any]) -> Any:
        run = await dispatcher.submit(chat, "hello")
        for _ in range(MAX_JOBS + 2):
            fresh = await store.get_run(run["id"])
            assert fresh is not None
            if fresh["status"] != "queued":
                break
            # every job ends without the run being taken (say, a worker whose claim always fails)
            await _end_job(dispatcher, store, run["id"], abort=False)
            await dispatcher.sweep()
        return await store.get_run(run["id"]), await _jobs(dispatcher), await _next_prompt(dispatcher, chat)

    after, jobs, next_prompt = _run(db_url, tmp_path, body)
    assert after["status"] == "failed" and after["error_type"] == "NotRun"
    assert f"{MAX_JOBS} jobs" in after["error"]
    assert len(jobs) == MAX_JOBS and all(j[2] == "cancelled" for j in jobs)
    assert next_prompt == "accepted"


@pytest.mark.parametrize("away_for", ["the claim", "the claim and the record of its failure"])
def test_a_worker_whose_claim_fails_in_an_outage_leaves_a_run_the_sweep_runs_again(
    db_url: str, tmp_path: Path, away_for: str
) -> None:
    from cursor_agent_api.server.worker import Worker, WorkerSettings

    async def body(dispatcher: QueueDispatcher, store: Store, chat: dict[str, Any]) -> Any:
        worker = Worker(WorkerSettings(server=_settings(db_url, tmp_path), name="w1", concurrency=1))
        down = {"now": True}

        def unless_down(real: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
            async def call(*args: Any, **kwargs: Any) -> Any:
                if down["now"]:
                    raise ConnectionError("connection refused")
                return await real(*args, **kwargs)

            return call

        # The database is away for the worker's claim (and for its attempt to record the failure).
        worker.store.claim_run = unless_down(worker.store.claim_run)  # type: ignore[method-assign]
        if away_for != "the claim":
            worker.store.get_run = unless_down(worker.store.get_run)  # type: ignore[method-assign]

        async def work() -> None:  # take every job there is, then stop
            await worker.app.run_worker_async(
                queues=worker.queues, name="w1", concurrency=1, wait=False, delete_jobs="successful",
                install_signal_handlers=False,
            )  # fmt: skip

        run = await dispatcher.submit(chat, "hello")
        await worker.store.start()
        try:
            async with worker.app.open_async():
                await work()
                left = await store.get_run(run["id"]), await _jobs(dispatcher)
                down["now"] = False
                await dispatcher.sweep()
                await work()
        finally:
            await worker.store.close()
        return left, await store.get_run(run["id"]), await _next_prompt(dispatcher, chat)

    (left, jobs), after, next_prompt = _run(db_url, tmp_path, body)
    assert left["status"] == "queued" and [j[2] for j in jobs] == ["failed"]
    assert (after["status"], after["worker"]) == ("succeeded", "w1"), after["error"]
    assert next_prompt == "accepted"


async def _take_and_end_job(dispatcher: QueueDispatcher, store: Store, run_id: str,
                            ended_ago: float) -> dict[str, Any]:
    """A worker takes the run's job and claims the run; the job then fails without the run's
    end being recorded (the worker gave up writing it), ``ended_ago`` seconds ago."""
    from procrastinate.jobs import Status
    from sqlalchemy import text

    jobs = dispatcher.app.job_manager
    worker_id = await jobs.register_worker()
    job = await jobs.fetch_job(queues=None, worker_id=worker_id)
    assert job is not None and job.id is not None
    claimed = await store.claim_run(run_id, server_id="gone:1:1", worker="w9", worker_id=worker_id,
                                    job_id=job.id, queue=job.queue)
    assert claimed is not None and claimed["status"] == "running"
    await jobs.finish_job_by_id_async(job_id=job.id, status=Status.FAILED, delete_job=False)
    async with store.engine.begin() as conn:
        await conn.execute(text("UPDATE procrastinate_events SET at = at - make_interval(secs => :s) "
                                "WHERE job_id = :id"), {"s": ended_ago, "id": job.id})
    return claimed


def test_a_running_run_whose_job_ended_without_its_end_is_interrupted(db_url: str, tmp_path: Path) -> None:
    # the worker gave up recording the run's end (the database refused it twice) and its job
    # is over: nothing would ever end the run, and the chat would refuse every prompt
    async def body(dispatcher: QueueDispatcher, store: Store, chat: dict[str, Any]) -> Any:
        run = await dispatcher.submit(chat, "hello")
        await _take_and_end_job(dispatcher, store, run["id"], ended_ago=3600)
        await dispatcher.sweep()
        return await store.get_run(run["id"]), await _next_prompt(dispatcher, chat)

    after, prompt = _run(db_url, tmp_path, body)
    assert after["status"] == "interrupted" and after["error_type"] == "WorkerLost"
    assert "w9" in after["error"]
    assert prompt == "accepted"


def test_a_run_whose_job_has_just_ended_is_left_to_its_worker(db_url: str, tmp_path: Path) -> None:
    # within the grace the worker may still be writing the run's end: the sweep leaves it
    async def body(dispatcher: QueueDispatcher, store: Store, chat: dict[str, Any]) -> Any:
        run = await dispatcher.submit(chat, "hello")
        await _take_and_end_job(dispatcher, store, run["id"], ended_ago=0)
        await dispatcher.sweep()
        return await store.get_run(run["id"])

    assert _run(db_url, tmp_path, body)["status"] == "running"


def test_one_run_the_sweep_cannot_recover_does_not_stop_it_for_the_others(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A failure particular to one run (here, making its new job) is logged with the run's id;
    the sweep goes on with the other runs instead of failing on that run at every interval."""

    async def body(dispatcher: QueueDispatcher, store: Store, chat: dict[str, Any]) -> Any:
        other_chat = await store.create_chat(
            workspace=str(tmp_path), model=None, options={"trust": True}, title="u"
        )
        poisoned = await dispatcher.submit(chat, "hello")
        healthy = await dispatcher.submit(other_chat, "hello")
        for run in (poisoned, healthy):
            await _end_job(dispatcher, store, run["id"], abort=False)
        requeue = dispatcher._requeue

        async def failing_for_one(run: dict[str, Any]) -> str | None:
            if run["id"] == poisoned["id"]:
                raise ValueError("a value this run holds")
            return await requeue(run)

        monkeypatch.setattr(dispatcher, "_requeue", failing_for_one)
        await dispatcher.sweep()
        return poisoned["id"], await store.get_run(poisoned["id"]), await store.get_run(healthy["id"])

    poisoned_id, poisoned, healthy = _run(db_url, tmp_path, body)
    assert healthy["status"] == "queued" and healthy["job_id"] is not None
    jobs_of_healthy = healthy["job_id"]
    assert poisoned["status"] == "queued"  # left for the next sweep, untouched
    assert jobs_of_healthy != poisoned["job_id"]
    logged = [r.getMessage() for r in caplog.records]
    assert any(poisoned_id in m and "a value this run holds" in m for m in logged)


def test_a_transient_failure_ends_the_sweep_at_once(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database away fails every run alike: the sweep stops at the first (its loop logs
    one warning and tries again later) instead of logging one error per run."""

    async def body(dispatcher: QueueDispatcher, store: Store, chat: dict[str, Any]) -> Any:
        other_chat = await store.create_chat(
            workspace=str(tmp_path), model=None, options={"trust": True}, title="u"
        )
        tried: list[str] = []
        for c in (chat, other_chat):
            run = await dispatcher.submit(c, "hello")
            await _end_job(dispatcher, store, run["id"], abort=False)

        async def away(run: dict[str, Any]) -> str | None:
            tried.append(run["id"])
            raise ConnectionResetError("the database went away")

        monkeypatch.setattr(dispatcher, "_requeue", away)
        with pytest.raises(ConnectionResetError):
            await dispatcher.sweep()
        return tried

    assert len(_run(db_url, tmp_path, body)) == 1


def test_a_run_whose_worker_died_after_taking_its_job_but_before_claiming_it_runs_again(
    db_url: str, tmp_path: Path
) -> None:
    """A worker that dies between taking the job and claiming the run ran nothing of it:
    the run is given a new job (it was ``interrupted``, so the user's prompt was lost)."""

    async def body(dispatcher: QueueDispatcher, store: Store, chat: dict[str, Any]) -> Any:
        run = await dispatcher.submit(chat, "hello")
        manager = dispatcher.app.job_manager
        worker_id = await manager.register_worker()
        taken = await manager.fetch_job(queues=None, worker_id=worker_id)
        assert taken is not None and taken.task_kwargs["run_id"] == run["id"]
        # ... and the worker dies there: its heartbeats stop.
        dispatcher.settings = dataclasses.replace(dispatcher.settings, stalled_after=0.05)
        await asyncio.sleep(0.3)
        await dispatcher.sweep()
        after = await store.get_run(run["id"])
        records = await store.events_after(chat["id"], 0, 10)
        return taken.id, after, [(e.type, e.subtype) for e in records], await _jobs(dispatcher)

    old_job, after, records, jobs = _run(db_url, tmp_path, body)
    assert after["status"] == "queued", after
    assert after["job_id"] != old_job
    assert records == [("run", "queued")]
    assert [j[2] for j in jobs] == ["failed", "todo"]


def test_a_slow_worker_whose_job_the_sweep_finished_cannot_claim_the_requeued_run(
    db_url: str, tmp_path: Path
) -> None:
    """A worker that only stopped sending heartbeats for a while (a network blip) goes on
    with the job it took; the sweep finished that job and gave the run a new one. Its late
    claim through the old job is refused: the run is the new job's (the claim went through,
    and the abandoned-run step then interrupted the run while it ran)."""

    async def body(dispatcher: QueueDispatcher, store: Store, chat: dict[str, Any]) -> Any:
        run = await dispatcher.submit(chat, "hello")
        manager = dispatcher.app.job_manager
        worker_id = await manager.register_worker()
        taken = await manager.fetch_job(queues=None, worker_id=worker_id)
        assert taken is not None
        dispatcher.settings = dataclasses.replace(dispatcher.settings, stalled_after=0.05)
        await asyncio.sleep(0.3)
        await dispatcher.sweep()
        requeued = await store.get_run(run["id"])
        late = await store.claim_run(run["id"], server_id="w", worker="slow", worker_id=worker_id,
                                     job_id=taken.id, queue=taken.queue)
        # the new job's worker claims it
        fresh = await store.claim_run(run["id"], server_id="w", worker="w2", worker_id=worker_id,
                                      job_id=requeued["job_id"], queue=requeued["queue"])
        return taken.id, requeued, late, fresh

    old_job, requeued, late, fresh = _run(db_url, tmp_path, body)
    assert requeued["status"] == "queued" and requeued["job_id"] != old_job
    assert late is None
    assert fresh is not None and fresh["worker"] == "w2" and fresh["job_id"] == requeued["job_id"]


def test_a_prompt_whose_commit_answer_is_lost_is_answered_honestly_and_ends(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's commit went through but its answer was lost: the API server cannot know
    whether it is stored, so it must not say "nothing was changed"; the stored run, which no
    job carries, is ended by the sweep and the chat takes the prompt again."""
    from cursor_agent_api.server.dispatch import queue as queue_module
    from cursor_agent_api.server.runs import SubmitUncertainError

    async def body(dispatcher: QueueDispatcher, store: Store, chat: dict[str, Any]) -> Any:
        store.faults.fail_after_commit("run_create")
        with pytest.raises(SubmitUncertainError) as raised:
            await dispatcher.submit(chat, "hello")
        monkeypatch.setattr(queue_module, "UNQUEUED_AFTER", 0.0)
        await asyncio.sleep(0.01)
        await dispatcher.sweep()
        run = await store.get_run(raised.value.run_id)
        return str(raised.value), run, await _next_prompt(dispatcher, chat)

    message, run, next_prompt = _run(db_url, tmp_path, body)
    assert "nothing was changed" not in message and "may have been stored" in message
    assert "interrupted" in message
    assert run is not None and run["status"] == "interrupted"
    assert next_prompt == "accepted"


def test_a_job_a_stopping_worker_fetched_is_left_for_a_new_job(db_url: str, tmp_path: Path) -> None:
    from types import SimpleNamespace

    from cursor_agent_api.server.worker import Worker, WorkerSettings

    async def body(dispatcher: QueueDispatcher, store: Store, chat: dict[str, Any]) -> Any:
        run = await store.get_run((await dispatcher.submit(chat, "hello"))["id"])
        assert run is not None
        worker = Worker(WorkerSettings(server=_settings(db_url, tmp_path), name="w1"))
        worker.stop()  # the stop begins as Procrastinate hands it the job: it is not run
        jobs = dispatcher.app.job_manager
        worker_id = await jobs.register_worker()
        job = await jobs.fetch_job(queues=None, worker_id=worker_id)
        assert job is not None and job.id == run["job_id"]
        context = SimpleNamespace(job=job, abort_reason=lambda: None)
        assert await worker._job(context, run["id"]) == "left queued: the worker is stopping"
        await jobs.finish_job(job=job, status=Status.SUCCEEDED, delete_job=True)  # as Procrastinate does
        left = await store.get_run(run["id"])
        await dispatcher.sweep()
        return left, await store.get_run(run["id"]), await _jobs(dispatcher)

    left, after, jobs = _run(db_url, tmp_path, body)
    assert left["status"] == "queued" and left["worker"] is None, "not claimed"
    assert after["status"] == "queued"
    ((job_id, queue, status),) = jobs
    assert (queue, status) == ("runs", "todo"), "a new job carries it, for another worker"
    assert after["job_id"] == job_id != left["job_id"]
