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
