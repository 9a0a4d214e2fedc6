"""What holding the run costs each batch of agent events (``Store.append``'s ``active_run``:
a batch's transaction requires its run to be active, review of 2026-11-24, wave 11).

The same store, the same run, the same batches of agent lines (``--batch`` records, the
runner's ``batch_max_events``), appended alternately with and without ``active_run``, on
SQLite's fast path (the write path of agent events) and, with ``--database-url``, on
PostgreSQL. Medians of the wall and CPU time per batch, and of the per-pair ratios (with /
without): one process, interleaved, so the machine's load falls on both alike.

Usage::

    .venv/bin/python bench/bench_run_hold.py
    .venv/bin/python bench/bench_run_hold.py --database-url postgresql+asyncpg://…
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time

import orjson

from cursor_agent_api.server.runs import run_record
from cursor_agent_api.server.store import NewRecord, Store


def _batch(run_id: str, n: int) -> list[NewRecord]:
    out = []
    for i in range(n):
        text = {"type": "text", "text": f"w{i} "}
        data = {"type": "assistant", "message": {"role": "assistant", "content": [text]},
                "session_id": "s", "timestamp_ms": 1}
        out.append(NewRecord("agent", "assistant", None, {"data": data, "kind": "assistant"},
                             orjson.dumps(data), run_id))
    return out


async def _measure(url: str, pairs: int, n: int) -> dict[str, float]:
    store = Store(url)
    await store.start()
    try:
        chat = await store.create_chat(workspace="/w", model=None, options={}, title="t")
        run, _ = await store.create_run(chat["id"], "go", lambda r: run_record("queued", r))
        await store.update_run(run["id"], status="running")
        walls: dict[bool, list[float]] = {False: [], True: []}
        cpus: dict[bool, list[float]] = {False: [], True: []}
        for i in range(pairs + 5):  # the first 5 pairs warm up
            for hold in ((False, True) if i % 2 else (True, False)):
                new = _batch(run["id"], n)
                t0, c0 = time.perf_counter(), time.process_time()
                await store.append(chat["id"], new, active_run=run["id"] if hold else None)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                if i >= 5:
                    walls[hold].append(wall)
                    cpus[hold].append(cpu)
        return {
            "without µs/batch": round(statistics.median(walls[False]) * 1e6),
            "with µs/batch": round(statistics.median(walls[True]) * 1e6),
            "wall ratio (median of pairs)": round(statistics.median(
                w / o for w, o in zip(walls[True], walls[False], strict=True)), 3),
            "CPU ratio (median of pairs)": round(statistics.median(
                w / o for w, o in zip(cpus[True], cpus[False], strict=True) if o > 0), 3),
        }
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--database-url", help="also on this database (PostgreSQL)")
    args = parser.parse_args()
    urls = [("sqlite", f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='bench-hold-')}/db.sqlite3")]
    if args.database_url:
        urls.append(("postgresql", args.database_url))
    for name, url in urls:
        print(name, asyncio.run(_measure(url, args.pairs, args.batch)))


if __name__ == "__main__":
    main()
