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
