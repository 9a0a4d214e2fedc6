"""A run ended by another process is not written to afterwards (review of 2026-11-24, wave 13).

A run's end and its event batches were written only while the run is active; its start
(``run/running``, status ``running``), its process group (``pid``, ``pgid``) and its ACP
requests' records were not: a run ended elsewhere between its creation and its start (a
cancel, a sweep, a surviving server ending a dead owner's run) was set back to ``running``
and run, its pid written into the ended row, its requests' records stored after its final
record. Now each of these writes goes through only while the run is active; when one is
refused the run is treated as ended elsewhere: its agent is stopped (or never started),
nothing more of it is written, a log line says so. Each race is made deterministic with a
hook; SQLite, or PostgreSQL when ``CURSOR_AGENT_API_TEST_DATABASE_URL`` is set."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api.server import runs as runs_module
from cursor_agent_api.server.dispatch import run_ends
from cursor_agent_api.server.hub import Hub
from cursor_agent_api.server.log import EventLog
from cursor_agent_api.server.requests import (
    AlreadyAnsweredError,
    AnswerIn,
    RunRequests,
    close_open_requests,
    pair_requests,
    request_records,
)
from cursor_agent_api.server.runs import RunManager, run_record
from cursor_agent_api.server.settings import ServerSettings
from cursor_agent_api.server.store import Store

ELSEWHERE = "ended by another process (the test)"


@asynccontextmanager
async def _manager(
    db_url: str, tmp_path: Path, **settings: Any
) -> AsyncIterator[tuple[Store, EventLog, RunManager]]:
    store = Store(db_url)
    await store.start()
    log = EventLog(store, Hub(), 65536)
    env = {"CURSOR_CONFIG_DIR": str(tmp_path / "cursor-config")}
    runs = RunManager(
        ServerSettings(token="t" * 16, database_url=db_url, roots=(tmp_path,), simulate=True,
                       agent_env=env, **settings),
        log,
    )
    try:
        yield store, log, runs
    finally:
        await runs.shutdown()
        await store.close()


async def _end_elsewhere(store: Store, log: EventLog, run_id: str, status: str = "interrupted") -> None:
    """What another process does (an API server's sweep, a cancel, a surviving server)."""
    row = await store.get_run(run_id)
    assert row is not None
    assert await run_ends.finish_if_active(log, row, status, error=ELSEWHERE)


async def _after_the_end(store: Store, chat_id: str) -> list[tuple[str | None, str | None, str | None]]:
    """The records that follow the run's first end (there must be none)."""
    recs = await store.events_after(chat_id, 0, 10_000)
    end = next(r.seq for r in recs if r.type == "run" and r.subtype not in ("queued", "running"))
    return [(r.source, r.type, r.subtype) for r in recs if r.seq > end]


async def _chat(store: Store, tmp_path: Path, **options: Any) -> dict[str, Any]:
    return await store.create_chat(workspace=str(tmp_path), model=None, options={"trust": True, **options},
                                   title="t")


def test_a_run_ended_elsewhere_before_its_start_is_not_set_running_again(
    db_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Queued behind the limit, the run is cancelled by another process; when its slot comes,
    its start is refused: it stays cancelled, no agent starts, nothing follows its end."""

    async def main() -> tuple[dict[str, Any], list[Any], list[Any]]:
        async with _manager(db_url, tmp_path, max_concurrent_runs=1) as (store, log, runs):
            chat = await _chat(store, tmp_path)
            await runs._slots.acquire()  # the one slot is taken: the run waits, queued
            run = await runs.submit(chat, "hello")
            task = runs._active[run["id"]].task
            assert task is not None
            await _end_elsewhere(store, log, run["id"], "cancelled")
            runs._slots.release()
            await asyncio.wait_for(task, 60)
            row = await store.get_run(run["id"])
            assert row is not None
            recs = await store.events_after(chat["id"], 0, 10_000)
            return row, await _after_the_end(store, chat["id"]), [r for r in recs if r.source == "agent"]

    with caplog.at_level("WARNING", logger="cursor_agent_api"):
        row, later, agent = asyncio.run(main())
    assert (row["status"], row["error"]) == ("cancelled", ELSEWHERE), "not set back to running"
    assert row["started_ms"] is None and row["pid"] is None
    assert later == [], "nothing after the run's final record"
    assert agent == [], "no agent was started"
    assert "is already cancelled (ended by another process)" in caplog.text
    assert "Traceback" not in caplog.text


def test_the_pid_of_a_run_ended_elsewhere_is_not_written(
    db_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run is ended elsewhere as its agent starts: its process group is not written into
    the ended row, and the agent is stopped at once."""

    async def main() -> tuple[dict[str, Any], list[Any]]:
        async with _manager(db_url, tmp_path) as (store, log, runs):
            real = runs_module.open_stream

            async def opened_then_ended(settings: Any, launch: Any) -> Any:
                stream = await real(settings, launch)
                (active,) = await store.active_runs()
                await _end_elsewhere(store, log, str(active["id"]))
                return stream

            monkeypatch.setattr(runs_module, "open_stream", opened_then_ended)
            chat = await _chat(store, tmp_path)
            run = await runs.submit(chat, "hello")
            task = runs._active[run["id"]].task
            assert task is not None
            await asyncio.wait_for(task, 60)
            row = await store.get_run(run["id"])
            assert row is not None
            return row, await _after_the_end(store, chat["id"])

    with caplog.at_level("WARNING", logger="cursor_agent_api"):
        row, later = asyncio.run(main())
    assert (row["status"], row["error"]) == ("interrupted", ELSEWHERE)
    assert (row["pid"], row["pgid"], row["proc_start"]) == (None, None, None), "written after the end"
    assert later == []
    assert "is already interrupted (ended by another process)" in caplog.text
    assert "Traceback" not in caplog.text


# ---- an ACP run's requests -----------------------------------------------------------------


def test_a_request_of_a_run_ended_elsewhere_is_not_stored_and_the_agent_hears_a_cancel(
    db_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent asks permission just after the run was ended elsewhere: the request's record
    is refused; the agent is answered ``cancelled`` (nobody could answer a request nobody
    sees) and stopped; nothing follows the run's end."""

    async def main() -> tuple[dict[str, Any], list[Any], list[dict[str, Any]]]:
        # (the timeout only bounds the old code's wait for an answer to the request it stored)
        async with _manager(db_url, tmp_path, permission_timeout=2.0) as (store, log, runs):
            real = RunRequests.ask
            answers: list[dict[str, Any]] = []

            async def ask_after_the_end(self: RunRequests, kind: str, info: dict[str, Any]) -> dict[str, Any]:
                await _end_elsewhere(store, log, self.run_id)
                answer = await real(self, kind, info)
                answers.append(answer)
                return answer

            monkeypatch.setattr(RunRequests, "ask", ask_after_the_end)
            chat = await _chat(store, tmp_path, transport="acp")
            run = await runs.submit(chat, "run `echo never-run`")
            task = runs._active[run["id"]].task
            assert task is not None
            await asyncio.wait_for(task, 60)
            row = await store.get_run(run["id"])
            assert row is not None
            return row, await _after_the_end(store, chat["id"]), answers

    with caplog.at_level("WARNING", logger="cursor_agent_api"):
        row, later, answers = asyncio.run(main())
    assert row["status"] == "interrupted"
    assert later == [], "no request record after the run's end"
    assert [a["decision"] for a in answers] == ["cancelled"]
    assert "is already interrupted (ended by another process)" in caplog.text
    assert "Traceback" not in caplog.text


def test_an_answer_to_a_request_of_a_run_ended_elsewhere_is_refused(
    db_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A request waits; the run is ended elsewhere; then a person answers ``allow-once``: the
    answer is refused (409: not stored after the run's end), the agent hears ``cancelled``,
    not the allow, and is stopped; the run's own close of its requests writes nothing."""

    async def main() -> tuple[dict[str, Any], list[Any], str, list[dict[str, Any]]]:
        async with _manager(db_url, tmp_path, permission_timeout=30.0) as (store, log, runs):
            chat = await _chat(store, tmp_path, transport="acp")
            run = await runs.submit(chat, "run `echo never-run`")
            active = runs._active[run["id"]]
            assert active.task is not None and active.requests is not None
            while not active.requests.open_count():
                await asyncio.sleep(0.02)  # the agent asks (a condition polled, not a delay)
            (pending,) = active.requests.requests.values()
            await _end_elsewhere(store, log, run["id"])
            with pytest.raises(AlreadyAnsweredError) as refused:
                await runs.answer(run["id"], pending.id, AnswerIn(decision="allow-once"))
            await asyncio.wait_for(active.task, 60)
            row = await store.get_run(run["id"])
            assert row is not None
            assert pending.future.done()
            heard = [pending.future.result()]
            return row, await _after_the_end(store, chat["id"]), str(refused.value), heard

    with caplog.at_level("WARNING", logger="cursor_agent_api"):
        row, later, message, heard = asyncio.run(main())
    assert row["status"] == "interrupted"
    assert later == [], "no answer record after the run's end"
    assert "already interrupted" in message and "not stored" in message
    assert [h["decision"] for h in heard] == ["cancelled"]
    assert "is already interrupted (ended by another process)" in caplog.text
    assert "Traceback" not in caplog.text


def test_closing_the_requests_of_a_run_that_is_over_writes_nothing(db_url: str, tmp_path: Path) -> None:
    """A surviving server closes a dead owner's open requests, then ends its run: when another
    process ended the run first, the requests' close is refused too (nothing after the end)."""

    async def main() -> tuple[int, list[Any], list[dict[str, Any]]]:
        store = Store(db_url)
        await store.start()
        try:
            log = EventLog(store, Hub(), 65536)
            chat = await _chat(store, tmp_path, transport="acp")
            run = await log.create_run(chat["id"], "hi", lambda r: run_record("queued", r))
            requests = RunRequests(log, chat["id"], run["id"], None)
            asked = asyncio.ensure_future(requests.ask("plan", {"name": "p", "plan": "…"}))
            while not requests.open_count():
                await asyncio.sleep(0)
            await _end_elsewhere(store, log, run["id"])
            closed = await close_open_requests(log, chat["id"], run["id"], by="restart", reason="gone")
            asked.cancel()
            await asyncio.gather(asked, return_exceptions=True)
            pairs = pair_requests(await request_records(store, [run["id"]]))
            return closed, await _after_the_end(store, chat["id"]), pairs
        finally:
            await store.close()

    closed, later, pairs = asyncio.run(main())
    assert closed == 0
    assert later == []
    assert [p["answer"] for p in pairs] == [None]

