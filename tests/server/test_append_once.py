"""``AppendOnce`` (review of 2026-11-24): an append tried again after a failure that may have
come after its commit is stored **once**, and only its own rows count as "stored".

An attempt that was rolled back leaves its seqs to the next writer of the chat; that writer
may start in the same millisecond (two servers writing one chat: a worker's run events and
an API server's answers). Its rows then have the attempt's seqs *and* time: the retry must
not take them for the attempt's and drop the attempt's records.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import orjson
import pytest
from server_helpers import PG_ENV
from sqlalchemy import text

import cursor_agent_api.server.store.writes as writes
from cursor_agent_api.server.store import AppendOnce, EventRecord, NewRecord, Store, StoreUnavailableError

NOW = 1_700_000_000_000
LINE = b'{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"A"}]}}'


def _agent(line: bytes = LINE) -> NewRecord:
    """An agent event stored as its line only (payload, source, type NULL in its row)."""
    data = orjson.loads(line)
    return NewRecord("agent", "assistant", None, {"type": "assistant", "data": data}, raw=line)


def _note(who: str, type_: str = "note") -> NewRecord:
    return NewRecord("server", type_, None, {"who": who})


def _log(recs: list[EventRecord]) -> list[tuple[int, str, dict[str, Any]]]:
    return [(r.seq, r.type, r.payload) for r in recs]


class _LostOnce:
    """A hook of the append's transaction that fails the first time, as a connection lost
    mid-transaction does (transient: the transaction is rolled back, the writer cannot
    know whether its commit went through)."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, conn: Any, recs: Any) -> None:
        self.calls += 1
        if self.calls == 1:
            raise StoreUnavailableError("connection lost before COMMIT")


async def _noop(conn: Any, recs: Any) -> None:
    return None


def _run(db_url: str, body: Any) -> Any:
    async def main() -> Any:
        store = Store(db_url)
        await store.start()
        try:
            chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
            return await body(store, chat["id"])
        finally:
            await store.close()

    return asyncio.run(main())


async def _new_run(store: Store, chat_id: str) -> str:
    """A run of the chat (its ``run/queued`` record is seq 1)."""
    def queued(run: dict[str, Any]) -> NewRecord:
        return NewRecord("server", "run", "queued", {"id": run["id"]})

    run, _ = await store.create_run(chat_id, "p", queued)
    return str(run["id"])


def _with_run(rec: NewRecord, run_id: str) -> NewRecord:
    return NewRecord(rec.source, rec.type, rec.subtype, rec.payload, rec.raw, run_id)


@pytest.mark.parametrize("hook", ["before", "after"])
@pytest.mark.parametrize(
    ("mine", "other"),
    [
        pytest.param(lambda run: [_note("A")], lambda run: [_note("B")], id="other-payload"),
        pytest.param(lambda run: [_note("A")], lambda run: [_note("A", "other")], id="other-type"),
        pytest.param(lambda run: [_note("A")], lambda run: [_with_run(_note("A"), run)], id="other-run"),
        pytest.param(lambda run: [_agent()], lambda run: [_agent(LINE.replace(b"A", b"B"))], id="other-line"),
        pytest.param(
            lambda run: [_with_run(_agent(), run), _note("A")],
            lambda run: [_with_run(_agent(), run), _note("B")],
            id="one-row-of-two-differs",
        ),
    ],
)
def test_an_attempt_rolled_back_is_written_again_although_another_writer_took_its_seqs_in_the_same_ms(
    db_url: str, monkeypatch: pytest.MonkeyPatch, hook: str, mine: Any, other: Any
) -> None:
    """The reviewer's repro: A's transaction fails (before or after its insert) and rolls
    back; B, started in the same millisecond, takes A's seqs; A's retry must write A's
    records, not report B's rows as A's."""
    monkeypatch.setattr(writes, "now_ms", lambda: NOW)  # both appends in one millisecond

    async def body(store: Store, chat_id: str) -> tuple[Any, Any, int]:
        run = await _new_run(store, chat_id)
        batch, theirs = mine(run), other(run)
        once = AppendOnce()
        lost = _LostOnce()
        with pytest.raises(StoreUnavailableError):
            await store.append(chat_id, batch, once=once, **{hook: lost})
        assert once.uncertain
        await store.append(chat_id, theirs)  # the other writer: A's seqs, A's time
        recs = await store.append(chat_id, batch, once=once, **{hook: lost})
        assert not once.uncertain
        return _log(list(recs)), _log(await store.events_after(chat_id, 0, 100)), len(theirs)

    returned, stored, n = _run(db_url, body)
    assert [seq for seq, _, _ in returned] == list(range(2 + n, 2 + n + len(returned))), (
        "A's records were reported stored at B's seqs"
    )
    assert stored[1 + n :] == returned, "what the retry returned is what the log holds"
    assert len(stored) == 1 + n + len(returned), "the run's record, B's records and A's"


@pytest.mark.parametrize("hook", [None, "before"], ids=["plain", "with-hook"])
def test_an_attempt_whose_commit_went_through_is_not_written_again(db_url: str, hook: str | None) -> None:
    """The commit went through, its answer was lost: the retry gives the stored records back
    (each row compared with the attempt's: lines stored alone, payloads, a line with its
    payload, records of a run, a number past 64 bits) and writes nothing."""

    async def body(store: Store, chat_id: str) -> tuple[Any, Any]:
        run = await _new_run(store, chat_id)
        batch = [
            _with_run(_agent(), run),
            _note("A"),
            NewRecord("agent", "assistant", None, {"type": "x", "data": 1}, raw="not json", run_id=run),
            NewRecord("server", "note", None, {"tokens": 10**20, "s": "é\u2028"}, run_id=run),
        ]
        once = AppendOnce()
        hooks: dict[str, Any] = {} if hook is None else {hook: _noop}
        store.faults.fail_after_commit("events")
        with pytest.raises(StoreUnavailableError):
            await store.append(chat_id, batch, once=once, **hooks)
        assert once.uncertain
        recs = await store.append(chat_id, batch, once=once, **hooks)
        assert not once.uncertain
        return _log(list(recs)), _log(await store.events_after(chat_id, 0, 100))

    returned, stored = _run(db_url, body)
    assert [seq for seq, _, _ in returned] == [2, 3, 4, 5]
    assert stored[1:] == returned, "the batch is in the log once"


def test_the_lookup_waits_for_a_commit_still_in_flight(db_url: str) -> None:
    """PostgreSQL: a writer whose connection dropped during COMMIT gets its error while the
    server may still be committing. The lookup of the retry waits for the chat's row lock,
    which that transaction holds until it ends, and then sees its rows."""
    if not os.environ.get(PG_ENV):
        pytest.skip(
            f"PostgreSQL only ({PG_ENV}): on SQLite a commit ends in this process before its "
            "error reaches the writer (nothing lands later)"
        )

    async def body(store: Store, chat_id: str) -> tuple[bool, Any, Any]:
        once = AppendOnce()
        inside, release = asyncio.Event(), asyncio.Event()

        async def hold(conn: Any, recs: Any) -> None:  # the transaction, not yet committed
            inside.set()
            await release.wait()

        writer = asyncio.create_task(store.append(chat_id, [_note("A")], once=once, after=hold))
        await inside.wait()
        attempt = once.attempt
        assert attempt is not None
        lookup = asyncio.create_task(store._stored_attempt(attempt))
        waiting = (
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        async with store.engine.connect() as conn:
            for _ in range(1000):  # until the lookup waits for the lock (or, unfixed, is done)
                if lookup.done() or (await conn.execute(text(waiting))).scalar_one() > 0:
                    break
                await asyncio.sleep(0.01)
        blocked = not lookup.done()
        release.set()
        written = await writer
        found = await lookup
        return blocked, _log(list(written)), None if found is None else _log(found)

    blocked, written, found = _run(db_url, body)
    assert blocked, "the lookup read the log while the attempt's transaction was still open"
    assert found == written == [(1, "note", {"who": "A"})]
