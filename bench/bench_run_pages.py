"""A page of a very long chat's runs, with and without the index of migration 0007.

Run: ``.venv/bin/python bench/bench_run_pages.py [--database-url URL] [--rounds N]``

The chat is ``tests/server/test_many_runs.py``'s: 32,769 finished runs (inserted in one
statement), in a fresh SQLite file, or in the PostgreSQL database ``--database-url`` names
(its ``runs`` table is emptied of them at the end). What is timed is what a request of a
page costs the store: ``Store.page_runs`` (``GET …/runs``) and ``Store.read_chat_turns``
(``GET …/turns``), ``limit`` 100, for the newest page and for a page before the 1,000th
oldest run. "before" is the schema before 0007 (``ix_runs_chat_id`` on ``chat_id`` alone),
"after" 0007's ``ix_runs_chat_order (chat_id, created_ms, id)``: the same database, the
index swapped between the two sides of each round (``ANALYZE`` after each swap on
PostgreSQL), in alternating order; medians over the rounds. Never run as a test.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import text

from cursor_agent_api.server.store import Store

RUNS = 32_769
OLD = ("DROP INDEX ix_runs_chat_order", "CREATE INDEX ix_runs_chat_id ON runs (chat_id)")
NEW = ("DROP INDEX ix_runs_chat_id", "CREATE INDEX ix_runs_chat_order ON runs (chat_id, created_ms, id)")


async def _fill(store: Store) -> str:
    chat = await store.create_chat(workspace="/w", model=None, options={}, title="bench")
    series = (
        f"generate_series(1, {RUNS}) AS g(i)"
        if not store.is_sqlite
        else f"(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {RUNS}) "
        "SELECT i FROM s) AS g"
    )
    async with store.transaction() as conn:
        await conn.execute(text(
            "INSERT INTO runs (id, chat_id, prompt, status, created_ms, turn, num) "
            "SELECT 'bench-' || i, :chat, 'p', 'succeeded', i, '{}', 2000000000 + i FROM " + series
        ), {"chat": chat["id"]})
    return str(chat["id"])


async def _schema(store: Store, statements: tuple[str, ...]) -> None:
    async with store.transaction() as conn:
        for statement in statements:
            await conn.execute(text(statement))
        if not store.is_sqlite:
            await conn.execute(text("ANALYZE runs"))


async def _time(call: Callable[[], Awaitable[Any]], n: int = 5) -> float:
    """The median of ``n`` calls, in ms."""
    times = []
    for _ in range(n):
        start = time.perf_counter()
        await call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


async def main(url: str, rounds: int) -> None:
    store = Store(url)
    await store.start()
    chat = await _fill(store)
    deep = "bench-1000"
    cases: dict[str, Callable[[], Awaitable[Any]]] = {
        "…/runs, newest page": lambda: store.page_runs(chat, before_run=None, limit=100, max_bytes=4 << 20),
        "…/runs, before the 1,000th run": lambda: store.page_runs(
            chat, before_run=deep, limit=100, max_bytes=4 << 20),
        "…/turns, newest page": lambda: store.read_chat_turns(chat, limit=100, max_bytes=4 << 20),
        "…/turns, before the 1,000th run": lambda: store.read_chat_turns(
            chat, before_run=deep, limit=100, max_bytes=4 << 20),
    }
    found: dict[tuple[str, str], list[float]] = {}
    try:
        for r in range(rounds):
            sides = [("before", OLD, NEW), ("after", (), ())]
            for side, enter, leave in sides if r % 2 == 0 else sides[::-1]:
                await _schema(store, enter)
                for name, call in cases.items():
                    await call()  # warm
                    found.setdefault((name, side), []).append(await _time(call))
                await _schema(store, leave)
    finally:
        async with store.transaction() as conn:
            await conn.execute(text("DELETE FROM runs WHERE id LIKE 'bench-%'"))
        await store.close()
    print(f"{store.dialect}, {RUNS:,} runs, {rounds} rounds (median ms of 5 calls, median over rounds)")
    print("| page | before (ix_runs_chat_id) | after (ix_runs_chat_order) | after/before |")
    print("|---|---:|---:|---:|")
    for name in cases:
        before = statistics.median(found[(name, "before")])
        after = statistics.median(found[(name, "after")])
        print(f"| {name} | {before:.1f} ms | {after:.1f} ms | {after / before:.2f}× |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    url = args.database_url or f"sqlite+aiosqlite:///{tempfile.mkdtemp()}/bench.sqlite3"
    asyncio.run(main(url, args.rounds))
