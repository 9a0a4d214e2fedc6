"""An answer to an ACP request is stored before the agent hears it (review of 2026-11-24, web
steering, finding 2).

A person's answer whose record could not be stored (the database locked, a full disk) was
given to the agent all the same, with a 200: the chat then showed the request open for good,
its card answerable again but refused. Now a person's answer is stored first or not given at
all (the store's error: 503 at the endpoint), and the request stays open for another try. The
library's own answers (a timeout, a cancel, the run's end) cannot wait: the agent hears them,
and a record the store missed goes in with the run's end. SQLite, or PostgreSQL when
``CURSOR_AGENT_API_TEST_DATABASE_URL`` is set."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from server_helpers import queued_run
from sqlalchemy.exc import OperationalError

from cursor_agent_api.server.log import EventLog
from cursor_agent_api.server.requests import ANSWERED, AnswerIn, pair_requests, request_records
from cursor_agent_api.server.store import NewRecord, is_transient

from .test_late_writes import _chat, _manager


def _locked() -> OperationalError:
    return OperationalError("INSERT INTO events …", {}, Exception("database is locked"))


def _failing_answer_writes(monkeypatch: pytest.MonkeyPatch, times: int) -> list[str]:
    """The next ``times`` appends holding an answer record fail as a locked database does."""
    real = EventLog.append
    failed: list[str] = []

    async def append(self: EventLog, chat_id: str, new: Sequence[NewRecord], **kw: Any) -> Any:
        if len(failed) < times and any(r.type == "request" and r.subtype == ANSWERED for r in new):
            failed.append(str(new[0].payload.get("by")))
            raise _locked()
        return await real(self, chat_id, new, **kw)

    monkeypatch.setattr(EventLog, "append", append)
    return failed


def test_a_persons_answer_that_cannot_be_stored_is_not_given(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def main() -> tuple[bool, bool, list[str], dict[str, Any], list[dict[str, Any]]]:
        async with _manager(db_url, tmp_path, permission_timeout=60.0) as (store, _log, runs):
            chat = await _chat(store, tmp_path, transport="acp")
            run = await runs.submit(chat, "run `echo asked`")
            active = runs._active[run["id"]]
            assert active.task is not None and active.requests is not None
            while not active.requests.open_count():
                await asyncio.sleep(0.02)  # the agent asks (a condition polled, not a delay)
            (pending,) = active.requests.requests.values()
            failed = _failing_answer_writes(monkeypatch, 1)
            with pytest.raises(OperationalError) as refused:
                await runs.answer(run["id"], pending.id, AnswerIn(decision="allow-once"))
            assert is_transient(refused.value)  # the endpoint's 503: try again shortly
            still_open, heard = active.requests.open_count() == 1, pending.future.done()
            await runs.answer(run["id"], pending.id, AnswerIn(decision="reject"))
            await asyncio.wait_for(active.task, 60)
            row = await store.get_run(run["id"])
            assert row is not None
            pairs = pair_requests(await request_records(store, [run["id"]]))
            return still_open, heard, failed, row, pairs

    still_open, heard, failed, row, pairs = asyncio.run(main())
    assert failed == ["user"]
    assert still_open, "the request stays open after an answer that was not stored"
    assert not heard, "the agent did not hear the answer that was not stored"
    assert row["status"] == "succeeded"
    (pair,) = pairs
    assert pair["answer"] is not None and pair["answer"]["decision"] == "reject"
    assert pair["answer"]["by"] == "user"


def test_the_librarys_answer_the_store_missed_goes_in_with_the_runs_end(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def main() -> tuple[list[str], dict[str, Any], list[dict[str, Any]], list[tuple[Any, ...]]]:
        async with _manager(db_url, tmp_path, permission_timeout=0.3) as (store, _log, runs):
            failed = _failing_answer_writes(monkeypatch, 1)
            chat = await _chat(store, tmp_path, transport="acp")
            run = await runs.submit(chat, "run `echo asked`")
            task = runs._active[run["id"]].task
            assert task is not None
            await asyncio.wait_for(task, 60)
            row = await store.get_run(run["id"])
            assert row is not None
            pairs = pair_requests(await request_records(store, [run["id"]]))
            recs = await store.events_after(chat["id"], 0, 10_000)
            return failed, row, pairs, [(r.type, r.subtype) for r in recs]

    failed, row, pairs, recs = asyncio.run(main())
    assert failed == ["timeout"]
    assert row["status"] == "succeeded"
    (pair,) = pairs
    assert pair["answer"] is not None and pair["answer"]["by"] == "timeout"
    # stored with the end, just before the run's final record
    assert recs[-2:] == [("request", ANSWERED), ("run", "succeeded")]


def test_a_request_that_cannot_be_stored_is_refused_at_once_in_plain_words(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The agent asks while the database cannot be written: nobody can see the request, so
    the agent is told no at once (as by a timeout), in words that never carry the driver's
    message (its SQL and values); the run goes on, no traceback."""
    real = EventLog.append
    failed: list[str] = []

    async def append(self: EventLog, chat_id: str, new: Sequence[NewRecord], **kw: Any) -> Any:
        if not failed and any(r.type == "request" and r.subtype != ANSWERED for r in new):
            failed.append(str(new[0].subtype))
            raise _locked()
        return await real(self, chat_id, new, **kw)

    async def main() -> tuple[dict[str, Any], list[dict[str, Any]], str]:
        async with _manager(db_url, tmp_path, permission_timeout=60.0) as (store, _log, runs):
            monkeypatch.setattr(EventLog, "append", append)
            chat = await _chat(store, tmp_path, transport="acp")
            run = await runs.submit(chat, "run `echo asked`")
            task = runs._active[run["id"]].task
            assert task is not None
            await asyncio.wait_for(task, 60)  # (the old code's wait: the 60 s timeout)
            row = await store.get_run(run["id"])
            assert row is not None
            text = " ".join(str(r.payload) for r in await store.events_after(chat["id"], 0, 10_000))
            return row, pair_requests(await request_records(store, [run["id"]])), text

    with caplog.at_level("WARNING", logger="cursor_agent_api"):
        row, pairs, text = asyncio.run(main())
    assert failed == ["permission"]
    assert row["status"] == "succeeded"
    assert pairs == []
    assert "the request could not be stored (database is locked" in text  # what the agent was told
    assert "INSERT" not in text
    assert "Traceback" not in caplog.text


# ---- the diff review of these changes (2026-11-24) ---------------------------------------


def _ask_one(db_url: str, body: Any) -> Any:
    """``body(store, log, requests, pending, asked)`` with one permission request waiting
    (``RunRequests`` of an active run, no agent)."""
    from cursor_agent_api.server.requests import RunRequests

    async def main() -> Any:
        async with queued_run(db_url) as (store, log, run):
            requests = RunRequests(log, run["chat_id"], run["id"], None)
            asked = asyncio.ensure_future(requests.ask("permission", {}))
            while not await request_records(store, [run["id"]]):
                await asyncio.sleep(0.01)  # the request's record is stored (a condition polled)
            (pending,) = requests.requests.values()
            try:
                return await body(store, log, requests, pending, asked)
            finally:
                asked.cancel()
                await asyncio.gather(asked, return_exceptions=True)

    return asyncio.run(main())


def test_an_answer_waiting_on_a_persons_failed_write_is_given(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person's answer is being written (a locked database) when the run's end (or the
    timeout) answers too: that answer waits for the write; the write fails (the person gets
    the error), so the waiting answer is given and stored; before, it waited for good."""
    real = EventLog.append
    gate, entered = asyncio.Event(), asyncio.Event()

    async def append(self: EventLog, chat_id: str, new: Sequence[NewRecord], **kw: Any) -> Any:
        if any(r.subtype == ANSWERED and r.payload.get("by") == "user" for r in new):
            entered.set()
            await gate.wait()  # the database is locked until the test says
            raise _locked()
        return await real(self, chat_id, new, **kw)

    async def body(store: Any, log: EventLog, requests: Any, pending: Any, asked: Any) -> Any:
        monkeypatch.setattr(EventLog, "append", append)
        person = asyncio.ensure_future(requests.answer(pending.id, AnswerIn(decision="allow-once")))
        await entered.wait()
        closing = asyncio.ensure_future(requests.close(by="run-end", reason="the run ended"))
        for _ in range(20):
            await asyncio.sleep(0)
        waited = not closing.done()
        gate.set()
        outcome = await asyncio.gather(person, return_exceptions=True)
        await asyncio.wait_for(closing, 10)
        heard = await asyncio.wait_for(asked, 10)
        pairs = pair_requests(await request_records(store, [requests.run_id]))
        return waited, outcome, heard, pairs

    waited, (outcome,), heard, (pair,) = _ask_one(db_url, body)
    assert waited, "the run's end waited for the person's write"
    assert isinstance(outcome, OperationalError)
    assert heard["decision"] == "cancelled" and heard["by"] == "run-end"
    assert pair["answer"]["by"] == "run-end"


def test_a_persons_answer_whose_commit_went_through_is_given(db_url: str) -> None:
    """The person's answer's COMMIT went through but its reply was lost: the store looks it
    up and the answer is given (200, the agent hears it), stored once; before, the person
    got 'nothing was changed' while the store said allowed, and the agent heard the
    timeout's reject later."""

    async def body(store: Any, log: EventLog, requests: Any, pending: Any, asked: Any) -> Any:
        store.faults.fail_after_commit("events")
        answer = await requests.answer(pending.id, AnswerIn(decision="allow-once"))
        heard = await asyncio.wait_for(asked, 10)
        recs = await request_records(store, [requests.run_id])
        return answer, heard, [r.payload["decision"] for r in recs if r.subtype == ANSWERED]

    answer, heard, stored = _ask_one(db_url, body)
    assert answer["decision"] == heard["decision"] == "allow-once"
    assert stored == ["allow-once"]


def test_the_sweep_closes_the_requests_written_while_it_ended_the_run(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that looked lost went on writing between the sweep's read of its run and the
    run's end: a request answered meanwhile keeps its answer (not overwritten by 'cancelled by
    restart') and a request asked meanwhile is closed too (before, it stayed open for good)."""
    from cursor_agent_api.server.dispatch import queue, run_ends

    async def main() -> list[tuple[str, Any]]:
        async with queued_run(db_url) as (store, log, run):
            chat = {"id": run["chat_id"]}
            rid = run["id"]
            await store.update_run(rid, status="running")

            def req(sub: str, payload: dict[str, Any]) -> NewRecord:
                return NewRecord("server", "request", sub, payload, None, rid)

            await log.append(chat["id"], [req("permission", {"request_id": "A", "kind": "permission"})])
            real = run_ends.load_run_fold
            wrote: list[bool] = []

            async def worker_writes_after_the_read(*a: Any, **kw: Any) -> Any:
                fold = await real(*a, **kw)  # (the turn's state: read as the requests are)
                if not wrote:  # what the (not really lost) worker commits in that window
                    wrote.append(True)
                    await log.append(chat["id"], [req(ANSWERED, {
                        "request_id": "A", "kind": "permission", "decision": "allow-once", "by": "user"})])
                    asked_b = req("permission", {"request_id": "B", "kind": "permission"})
                    await log.append(chat["id"], [asked_b])
                return fold

            monkeypatch.setattr(run_ends, "load_run_fold", worker_writes_after_the_read)
            row = await store.get_run(rid)
            assert row is not None
            assert await queue.interrupt_lost_run(log, row)
            return [(p["request"]["request_id"], p["answer"] and (p["answer"]["decision"], p["answer"]["by"]))
                    for p in pair_requests(await request_records(store, [rid]))]

    assert asyncio.run(main()) == [("A", ("allow-once", "user")), ("B", ("cancelled", "restart"))]
