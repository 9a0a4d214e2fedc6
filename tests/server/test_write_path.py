"""The write path of agent events (``Store.append`` and the turn state's planned writes):
what its shortcuts must keep (rows inserted by multi-row statements, the turn's text
aggregated per batch, the records' stamps made when read)."""

from __future__ import annotations

import asyncio
from typing import Any

from cursor_agent_api.protocol import parse_event
from cursor_agent_api.protocol.changes import AssistantRole, SegmentReplaced, TextAppended
from cursor_agent_api.server.store import NewRecord, Stamp, Stamps, Store, agent_payload, turn_writes
from cursor_agent_api.server.turns import FoldedBatch
from cursor_agent_api.sim import wire

SID = "8ef40118-8378-436d-8ba8-2436b19cc877"


def _agent(i: int) -> NewRecord:
    """An agent event as the runner hands it over: its line, as it came."""
    line = wire.encode(wire.assistant_delta(SID, f"word {i} ", 1000 + i), checked=False)
    e = parse_event(line.rstrip(b"\n"))
    return NewRecord("agent", e.type.value, e.subtype, agent_payload(e), e.line, None)


def test_batches_of_every_size_are_stored_whole_and_in_order(db_url: str) -> None:
    """Batches around the multi-row statements' sizes (64 rows, then 32, 16, … 1), agent
    lines and server records mixed: every record is stored once, at its seq, as it came."""
    sizes = [1, 2, 63, 64, 65, 127, 128, 200, 7]

    async def main() -> tuple[list[Any], list[NewRecord]]:
        store = Store(db_url)
        await store.start()
        try:
            chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
            sent: list[NewRecord] = []
            i = 0
            for size in sizes:
                batch = []
                for _ in range(size):
                    rec = _agent(i) if i % 5 else NewRecord("server", "note", None, {"i": i})
                    batch.append(rec)
                    i += 1
                recs = await store.append(chat["id"], batch)
                assert [r.seq for r in recs] == list(range(len(sent) + 1, len(sent) + size + 1))
                sent += batch
            return await store.events_after(chat["id"], 0, 10_000), sent
        finally:
            await store.close()

    stored, sent = asyncio.run(main())
    assert [r.seq for r in stored] == list(range(1, sum(sizes) + 1))
    for rec, new in zip(stored, sent, strict=True):
        assert (rec.source, rec.type, rec.subtype) == (new.source, new.type, new.subtype)
        if new.source == "agent":
            assert isinstance(new.raw, bytes)
            assert rec.raw == new.raw.decode()
            assert rec.payload["data"] == new.payload["data"]
        else:
            assert rec.payload == new.payload


def _text_rows(writes: list[tuple[Any, list[dict[str, Any]]]]) -> dict[str, list[tuple[int, str]]]:
    """The ``turn_texts`` rows of planned writes: appended and replaced, as (idx, text)."""
    appended, replaced = writes[0][1], writes[1][1]
    return {
        "appended": [(r["idx"], r["text"]) for r in appended],
        "replaced": [(r["idx"], r["text"]) for r in replaced],
    }


def test_text_appended_after_a_replace_in_one_batch_is_kept(db_url: str) -> None:
    """A segment's text appended, replaced, then appended again, all in one batch: the
    stored text is the replacement and what followed it (not the replacement alone)."""
    role = AssistantRole.RECAP
    changes = [
        (TextAppended(0, "a"),),
        (TextAppended(0, "b"),),
        (SegmentReplaced(0, "AB", role),),
        (TextAppended(0, "c"),),
        (TextAppended(1, "x"),),
        (TextAppended(1, "y"),),
    ]
    batch = FoldedBatch("c", "r", [], list(changes), 0, {})
    store = Store(db_url)  # only what the planned writes read (the dialect), not started
    lazy = turn_writes(store, batch, Stamps(10, 1000, len(changes)), 1 << 20)
    listed = turn_writes(store, batch, [Stamp(10 + i, 1000) for i in range(len(changes))], 1 << 20)
    assert _text_rows(lazy) == _text_rows(listed) == {
        "appended": [(1, "xy")],
        "replaced": [(0, "ABc")],
    }
    opened = {r["idx"]: r["opened_seq"] for w in lazy[:2] for r in w[1]}
    assert opened == {0: 10, 1: 14}


def test_the_records_an_append_returns_are_the_records_stored(db_url: str) -> None:
    """What ``append`` hands back (made when read on SQLite's write path) is what a read of
    the log gives: every index, negative ones, slices and iteration, read twice."""
    from collections.abc import Sequence

    from cursor_agent_api.server.store import EventRecord

    async def main() -> tuple[Sequence[EventRecord], list[EventRecord]]:
        store = Store(db_url)
        await store.start()
        try:
            chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
            await store.append(chat["id"], [NewRecord("server", "note", None, {"first": True})])
            batch = [_agent(i) if i % 3 else NewRecord("server", "note", None, {"i": i}) for i in range(70)]
            recs = await store.append(chat["id"], batch)
            return recs, await store.events_after(chat["id"], 1, 1000)
        finally:
            await store.close()

    recs, stored = asyncio.run(main())

    def fields(r: EventRecord) -> tuple[Any, ...]:
        return (r.seq, r.chat_id, r.run_id, r.source, r.type, r.subtype, r.payload.get("data"), r.raw)

    expected = [fields(r) for r in stored]
    assert [r.seq for r in stored] == list(range(2, 72))
    for _ in range(2):
        assert [fields(r) for r in recs] == expected
    assert len(recs) == 70
    assert [fields(recs[i]) for i in (0, 1, 69, -1, -70)] == [expected[i] for i in (0, 1, 69, -1, -70)]
    assert [fields(r) for r in recs[3:9:2]] == expected[3:9:2]
    for bad in (70, -71):
        try:
            recs[bad]
        except IndexError:
            pass
        else:
            raise AssertionError(f"recs[{bad}] did not raise IndexError")


def test_agent_lines_that_are_not_their_data_json_keep_their_payload(db_url: str) -> None:
    """Only a line that is exactly its data's compact JSON is stored alone (as bytes or as
    text, with derived fields or not: those are rebuilt when read); a spaced line, an extra
    payload field, a type that is not the data's keep their payload; every one reads back
    as it was sent."""
    base = parse_event(b'{"type":"user","text":"hi","session_id":"s"}')
    spaced = b'{"type": "user", "text": "hi", "session_id": "s"}'
    batch = [
        NewRecord("agent", "user", None, agent_payload(base), base.line, None),  # stored alone
        NewRecord("agent", "user", None, agent_payload(base), spaced, None),
        NewRecord("agent", "user", None, agent_payload(base), base.raw, None),  # as text
        NewRecord("agent", "user", None, agent_payload(base), base.line, None, {"text": "hi"}),
        NewRecord("agent", "user", None, {**agent_payload(base), "x": 1}, base.line, None),
        NewRecord("agent", "assistant", None, agent_payload(base), base.line, None),  # not its type
    ]

    async def main() -> tuple[list[Any], list[Any]]:
        store = Store(db_url)
        await store.start()
        try:
            chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
            await store.append(chat["id"], batch)
            stored = await store.events_after(chat["id"], 0, 100)
            async with store.snapshot() as conn:
                from sqlalchemy import text

                query = text("SELECT seq, payload IS NULL FROM events ORDER BY seq")
                rows = (await conn.execute(query)).all()
            return stored, [bool(r[1]) for r in rows]
        finally:
            await store.close()

    stored, line_only = asyncio.run(main())
    assert line_only == [True, False, True, True, False, False]
    for rec, new in zip(stored, batch, strict=True):
        assert rec.type == new.type
        assert rec.payload["data"] == base.data
        assert rec.raw == (new.raw.decode() if isinstance(new.raw, bytes) else new.raw)
    assert stored[4].payload["x"] == 1


def test_batches_of_agent_lines_alone_are_stored_as_the_general_path_stores_them(db_url: str) -> None:
    """A batch of agent lines stored alone, of one run (the runner's batch), takes SQLite's
    shortest insert (the chat, the first seq, the run and the time bound once per
    statement, one value per row): at sizes around its statements' (256 rows, then halves)
    and with or without a run, every row is the one the general path writes (``chat_key``,
    its seq, ``run_key``, ``ts_ms``, the line; ``source``, ``type``, ``subtype`` and
    ``payload`` NULL), in order, and reads back as it was sent."""
    from sqlalchemy import text

    from cursor_agent_api.server.runs import run_record

    sizes = [1, 255, 256, 257, 511, 3]

    async def main() -> tuple[list[Any], list[Any], list[tuple[NewRecord, bool]], int, int, int]:
        store = Store(db_url)
        await store.start()
        try:
            chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
            run, _ = await store.create_run(chat["id"], "go", lambda r: run_record("queued", r))
            base = len(await store.events_after(chat["id"], 0, 100))  # the run's own record
            sent: list[tuple[NewRecord, bool]] = []
            i = 0
            for k, size in enumerate(sizes):
                owned = k % 2 == 0  # every other batch of the run, the others of no run
                batch = []
                for _ in range(size):
                    rec = _agent(i)
                    batch.append(NewRecord(rec.source, rec.type, rec.subtype, rec.payload, rec.raw,
                                           run["id"] if owned else None))
                    i += 1
                recs = await store.append(chat["id"], batch)
                assert [r.seq for r in recs] == list(range(base + len(sent) + 1, base + len(sent) + size + 1))
                sent += [(r, owned) for r in batch]
            stored = await store.events_after(chat["id"], base, 10_000)
            async with store.snapshot() as conn:
                query = text(
                    "SELECT seq, ts_ms, source, type, subtype, payload, raw, run_key, chat_key"
                    f" FROM events WHERE seq > {base} ORDER BY seq"
                )
                rows = [tuple(r) for r in (await conn.execute(query)).all()]
                keys = text(
                    "SELECT (SELECT num FROM chats WHERE id = :c), (SELECT num FROM runs WHERE id = :r)"
                )
                chat_key, run_key = (await conn.execute(keys, {"c": chat["id"], "r": run["id"]})).one()
            return stored, rows, sent, chat_key, run_key, base
        finally:
            await store.close()

    stored, rows, sent, chat_key, run_key, base = asyncio.run(main())
    assert [row[0] for row in rows] == list(range(base + 1, base + sum(sizes) + 1))
    for row, rec, (new, owned) in zip(rows, stored, sent, strict=True):
        assert isinstance(new.raw, bytes)
        assert row[2:] == (None, None, None, None, new.raw, run_key if owned else None, chat_key)
        assert row[1] == rec.ts_ms > 0
        assert rec.run_id == (new.run_id if owned else None)
        assert (rec.source, rec.type, rec.subtype) == (new.source, new.type, new.subtype)
        assert rec.payload["data"] == new.payload["data"]
        assert rec.raw == new.raw.decode()


def test_a_batch_waits_for_another_process_holding_sqlites_lock(db_url: str) -> None:
    """SQLite's write path runs a batch's transaction in the event loop's thread on a
    connection that never waits for the file's lock; while another process holds it, the
    batch is written by the driver's connection, which waits for it (the busy timeout)
    without holding up the event loop: the append succeeds once the lock is released,
    nothing is lost, and the loop ran meanwhile."""
    import pytest
    from server_helpers import sqlite_write_lock

    if not db_url.startswith("sqlite"):
        pytest.skip("an SQLite file lock")
    path = db_url.split("///", 1)[1]

    async def main() -> tuple[list[Any], int]:
        store = Store(db_url, busy_timeout=60)
        await store.start()
        try:
            chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
            await store.append(chat["id"], [_agent(0)])  # the chat's keys known: the fast path
            with sqlite_write_lock(path):  # as another process would hold it
                append = asyncio.ensure_future(store.append(chat["id"], [_agent(i) for i in range(1, 4)]))
                ticks = 0
                while ticks < 20:  # the loop runs while the batch waits for the lock
                    await asyncio.sleep(0.01)
                    ticks += 1
                assert not append.done()
            recs = await append
            assert [r.seq for r in recs] == [2, 3, 4]
            return await store.events_after(chat["id"], 0, 100), ticks
        finally:
            await store.close()

    stored, ticks = asyncio.run(main())
    assert [r.seq for r in stored] == [1, 2, 3, 4]
    assert [r.payload["data"] for r in stored] == [_agent(i).payload["data"] for i in range(4)]
    assert ticks == 20


def test_the_wal_is_checkpointed_in_the_drivers_thread_never_in_the_event_loops(
    db_url: str, monkeypatch: Any
) -> None:
    """A batch's transaction runs in the event loop's thread, but a checkpoint (the WAL copied
    into the file and synced: ~20 ms for SQLite's default 1,000 pages) must not hold up the
    loop: the inline connection never checkpoints, and once it has committed about a
    checkpoint's worth, the driver's connection runs one in its own thread. The WAL stays
    bounded (here: a 64 KiB threshold, ~2 MB written)."""
    import os
    import threading

    import pytest

    from cursor_agent_api.server.store.writes import LogWrites

    if not db_url.startswith("sqlite"):
        pytest.skip("SQLite's WAL")
    path = db_url.split("///", 1)[1]
    threads: list[str] = []
    checkpoint = LogWrites._checkpoint

    async def recording(self: LogWrites, writer: Any) -> None:
        def where() -> None:
            threads.append(threading.current_thread().name)

        await writer._execute(where)
        await checkpoint(self, writer)

    monkeypatch.setattr(LogWrites, "_checkpoint", recording)

    async def main() -> tuple[int, int, str, int]:
        store = Store(db_url)
        await store.start()
        try:
            engine: Any = store
            assert engine._inline_writer.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
            engine._checkpoint_bytes = 64 * 1024
            chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
            biggest = 0
            for b in range(40):
                await store.append(chat["id"], [_agent(b * 100 + i) for i in range(100)])
                biggest = max(biggest, os.path.getsize(path + "-wal"))
            stored = await store.events_after(chat["id"], 0, 5000)
            return biggest, stored[-1].seq, threading.current_thread().name, len(stored)
        finally:
            await store.close()

    biggest, last_seq, loop_thread, stored = asyncio.run(main())
    assert stored == 4_000 and last_seq == 4_000
    assert biggest < 1024 * 1024, biggest  # ~2 MB of WAL without checkpoints
    assert threads and loop_thread not in threads
