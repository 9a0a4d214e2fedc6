"""The store on its own: per-chat seqs under concurrency, one active run, atomic appends."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cursor_agent_api.server.store import (
    ActiveRunError,
    NewRecord,
    NotFoundError,
    Store,
)


def _rec(i: int) -> NewRecord:
    return NewRecord("server", "note", None, {"i": i})


def test_concurrent_appends_from_two_engines_have_no_gap(db_url: str) -> None:
    """Two engines (as two server processes would) append to one chat at once."""

    async def main() -> tuple[list[int], list[int]]:
        a, b = Store(db_url), Store(db_url)
        await a.start()
        await b.start()
        try:
            chat = await a.create_chat(workspace="/w", model=None, options={}, title="t")
            other = await a.create_chat(workspace="/w", model=None, options={}, title="u")

            async def writer(store: Store, chat_id: str, n: int) -> None:
                for i in range(n):
                    await store.append(chat_id, [_rec(i)] * (1 + i % 3))

            await asyncio.gather(
                *(writer(s, chat["id"], 15) for s in (a, b, a, b)),
                writer(b, other["id"], 10),
            )
            recs = await a.events_after(chat["id"], 0, 10_000)
            others = await b.events_after(other["id"], 0, 10_000)
            return [r.seq for r in recs], [r.seq for r in others]
        finally:
            await a.close()
            await b.close()

    seqs, other_seqs = asyncio.run(main())
    per_writer = sum(1 + i % 3 for i in range(15))
    assert seqs == list(range(1, 4 * per_writer + 1))
    assert other_seqs == list(range(1, sum(1 + i % 3 for i in range(10)) + 1))


def test_failed_transaction_writes_nothing(db_url: str) -> None:
    async def main() -> tuple[int, int]:
        store = Store(db_url)
        await store.start()
        try:
            chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
            await store.append(chat["id"], [_rec(0)])

            async def boom(conn: Any, recs: Any) -> None:
                raise RuntimeError("boom")

            with pytest.raises(RuntimeError):
                await store.append(chat["id"], [_rec(1), _rec(2)], after=boom)
            with pytest.raises(NotFoundError):
                await store.append("nope", [_rec(1)])
            got = await store.get_chat(chat["id"])
            assert got is not None
            return got["last_seq"], await store.count_events(chat["id"])
        finally:
            await store.close()

    assert asyncio.run(main()) == (1, 1)


def test_one_active_run_per_chat_in_the_database(db_url: str) -> None:
    async def main() -> None:
        a, b = Store(db_url), Store(db_url)
        await a.start()
        await b.start()
        try:
            chat = await a.create_chat(workspace="/w", model=None, options={}, title="t")
            results = await asyncio.gather(
                a.create_run(chat["id"], "one", lambda r: _rec(1)),
                b.create_run(chat["id"], "two", lambda r: _rec(2)),
                return_exceptions=True,
            )
            assert sum(isinstance(r, ActiveRunError) for r in results) == 1
            assert len(await a.list_runs(chat["id"])) == 1
            assert (await a.get_chat(chat["id"]) or {})["last_seq"] == 1
            run = next(r for r in results if not isinstance(r, BaseException))[0]
            await a.update_run(run["id"], status="succeeded")
            await b.create_run(chat["id"], "three", lambda r: _rec(3))
            assert len(await b.list_runs(chat["id"])) == 2
        finally:
            await a.close()
            await b.close()

    asyncio.run(main())


def test_migrations_are_idempotent(db_url: str) -> None:
    async def main() -> None:
        for _ in range(2):
            store = Store(db_url)
            await store.start()
            await store.close()

    asyncio.run(main())


def test_an_older_database_is_upgraded_at_start(db_url: str) -> None:
    """A database at the first migration gets the newer columns; its rows stay readable."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    from cursor_agent_api.server.store import MIGRATIONS_DIR

    def to_0001(sync_conn: Any) -> None:
        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
        cfg.attributes["connection"] = sync_conn
        command.upgrade(cfg, "0001")

    async def main() -> dict[str, Any] | None:
        engine = create_async_engine(db_url)
        async with engine.begin() as conn:
            await conn.run_sync(to_0001)
            await conn.execute(
                text(
                    "INSERT INTO chats (id, workspace, options, title, created_ms, updated_ms, "
                    "last_seq) VALUES ('c1', '/w', '{}', 'old', 0, 0, 0)"
                )
            )
            await conn.execute(
                text(
                    "INSERT INTO runs (id, chat_id, prompt, status, created_ms) "
                    "VALUES ('r1', 'c1', 'hi', 'succeeded', 0)"
                )
            )
        await engine.dispose()
        store = Store(db_url)
        await store.start()
        try:
            return await store.get_run("r1")
        finally:
            await store.close()

    run = asyncio.run(main())
    assert run is not None and run["prompt"] == "hi" and run["server_id"] is None


def test_a_database_at_0005_is_upgraded_without_losing_an_event(db_url: str) -> None:
    """Migration 0006 rebuilds ``events`` (integer keys, lines as bytes): every record
    written before it reads back equal, and the chat takes new runs and records after."""
    import orjson
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    from cursor_agent_api.server.store import MIGRATIONS_DIR

    def to_0005(sync_conn: Any) -> None:
        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
        cfg.attributes["connection"] = sync_conn
        command.upgrade(cfg, "0005")

    line = '{"type":"assistant","message":{"content":[{"type":"text","text":"hi é"}]}}'
    spaced = '{"type": "user", "text": "a\\u00e9"}'
    old = [  # chat, run, seq, source, type, subtype, payload, raw: as the code before 0006 wrote them
        ("c1", "r1", 1, "server", "run", "queued", {"run": {"id": "r1"}}, None),
        ("c1", "r1", 2, "agent", "assistant", None, {"type": "assistant", "data": orjson.loads(line)}, None),
        ("c1", "r1", 3, "agent", "user", None, {"type": "user", "data": orjson.loads(spaced)}, spaced),
        ("c1", "r1", 4, "server", "run", "succeeded", {"run": {"id": "r1", "x": "naïve"}}, None),
        ("c2", None, 1, "server", "note", None, {"n": 1}, None),
        ("c1", "r2", 5, "agent", "raw", None, {"type": "raw", "data": {"type": "raw", "data": "x"}}, "x"),
    ]

    async def main() -> tuple[list[Any], list[Any], list[int]]:
        engine = create_async_engine(db_url)
        async with engine.begin() as conn:
            await conn.run_sync(to_0005)
            for chat, last in (("c1", 5), ("c2", 1)):
                await conn.execute(
                    text(
                        "INSERT INTO chats (id, workspace, options, title, created_ms, updated_ms, "
                        "last_seq) VALUES (:id, '/w', '{}', 'old', 0, 0, :last)"
                    ),
                    {"id": chat, "last": last},
                )
            for run in ("r1", "r2"):
                await conn.execute(
                    text(
                        "INSERT INTO runs (id, chat_id, prompt, status, created_ms) "
                        "VALUES (:id, 'c1', 'hi', 'succeeded', 0)"
                    ),
                    {"id": run},
                )
            for chat, run, seq, source, type_, subtype, payload, raw in old:
                await conn.execute(
                    text(
                        "INSERT INTO events (chat_id, run_id, seq, ts_ms, source, type, subtype, payload, "
                        "raw) "
                        "VALUES (:c, :r, :s, :t, :so, :ty, :st, :p, :raw)"
                    ),
                    {
                        "c": chat, "r": run, "s": seq, "t": 1000 + seq, "so": source, "ty": type_,
                        "st": subtype, "p": orjson.dumps(payload).decode(), "raw": raw,
                    },
                )
        await engine.dispose()
        store = Store(db_url)
        await store.start()
        try:
            back = [r.to_dict(True) for c in ("c1", "c2") for r in await store.events_after(c, 0, 100)]
            page, _ = await store.read_page("c1", 0, 100, max_bytes=1 << 20, max_field_bytes=1 << 20,
                                            include_raw=True)
            requests = await store.server_records(["r1"], "run")
            queued = NewRecord("server", "run", "queued", {})
            run, _rec = await store.create_run("c1", "again", lambda r: queued)
            recs = await store.append("c1", [NewRecord("server", "note", None, {"i": 1}, None, run["id"])])
            mine = await store.events_after("c1", 5, 100, run_id=run["id"])
            return back, [r.to_dict(True) for r in page], [r.seq for r in requests] + [recs[0].seq] + [
                r.seq for r in mine
            ]
        finally:
            await store.close()

    back, page, seqs = asyncio.run(main())
    expected = []
    for chat, run, seq, source, type_, subtype, payload, raw in sorted(old, key=lambda o: (o[0], o[2])):
        expected.append((chat, run, seq, 1000 + seq, source, type_, subtype, payload, raw))
    got = [
        (d["chat_id"], d["run_id"], d["seq"], d["ts_ms"], d["source"], d["type"], d["subtype"],
         {k: v for k, v in d["payload"].items() if k == "data" or d["source"] == "server" or k == "type"},
         d["raw"] if d["raw"] is None or d["source"] == "server" or d["seq"] in (3, 5) else None)
        for d in back
    ]
    assert got == expected
    # the agent records' derived fields and lines come back as before
    assert back[1]["payload"]["text"] == "hi é" and back[1]["raw"] == line
    assert back[2]["raw"] == spaced and back[2]["payload"]["text"] == "aé"
    assert page == back[:5]
    assert seqs == [1, 4, 7, 6, 7]


def test_a_database_upgraded_by_a_newer_version_is_refused_with_a_clear_error(db_url: str) -> None:
    """A schema past this version's last migration: a clear error that says what to do, and the
    database left as it was."""
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    from cursor_agent_api.server.store import SchemaTooNewError

    async def main() -> str:
        store = Store(db_url)
        await store.start()
        await store.close()
        engine = create_async_engine(db_url)
        async with engine.begin() as conn:
            await conn.execute(text("UPDATE alembic_version SET version_num = '0999'"))
        again = Store(db_url)
        try:
            with pytest.raises(SchemaTooNewError) as caught:
                await again.start()
        finally:
            await again.close()
        async with engine.begin() as conn:
            version = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar()
        await engine.dispose()
        assert version == "0999"
        return str(caught.value)

    message = asyncio.run(main())
    assert "newer cursor-agent-api" in message and "upgrade cursor-agent-api" in message
