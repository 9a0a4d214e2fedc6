"""Distributed mode (issue 16) beside the single-process server, in one run, on one PostgreSQL.

1. **Runs per minute dispatched**: ``--runs`` short runs (one per chat, posted at once, half
   through each API server) until the last is recorded: 2 API servers (``serve --dispatch
   queue``) and 3 workers (``--concurrency 4``), against one ``serve`` with ``--max-runs 12``
   (the same number of agents at once).
2. **Worker-to-browser latency**: for every record of ``--latency-runs`` streamed turns
   (partial output on), the time from the record's ``ts_ms`` (taken in the transaction that
   commits it, by the worker or the server) to its arrival on a WebSocket client (the
   browser's part; in the cluster, connected to the API server that did not take the prompt).
   p50 and p99, both setups.
3. **Fan-out**: 50 runs over the 3 workers, each chat watched by a WebSocket (alternating API
   servers): every record delivered exactly once (seqs compared with the store's), and how
   the runs spread over the workers.

Usage (PostgreSQL from ``scripts/postgres.sh``)::

    CURSOR_AGENT_API_TEST_DATABASE_URL="$(scripts/postgres.sh)" .venv/bin/python bench/bench_distributed.py

The agent is the simulator; every process runs on this machine (2 cores shared here).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "distributed"))

from cluster import PG_ENV, Cluster, pg_database  # type: ignore[import-not-found]  # noqa: E402
from server_helpers import FINAL, Server, all_events, new_chat, wait_run  # type: ignore[import-not-found]  # noqa: E402


def _post(client: Any, chat_id: str, prompt: str) -> str:
    r = client.post(f"/api/chats/{chat_id}/runs", json={"prompt": prompt})
    assert r.status_code == 202, r.text
    return str(r.json()["id"])


def throughput(servers: list[Server], runs: int) -> float:
    """Runs per minute: ``runs`` chats, one short run each, posted at once."""
    clients = [s.client() for s in servers]
    try:
        chats = [new_chat(clients[i % len(clients)]) for i in range(runs)]
        t0 = time.monotonic()
        ids = [
            _post(clients[i % len(clients)], ch["id"], f"reply with exactly: r{i}")
            for i, ch in enumerate(chats)
        ]
        done = [wait_run(clients[0], rid, 300) for rid in ids]
        elapsed = time.monotonic() - t0
    finally:
        for c in clients:
            c.close()
    assert all(d["status"] == "succeeded" for d in done), [d["status"] for d in done]
    return runs / elapsed * 60


async def _watch(url: str, stop_run: list[str], lat: list[float]) -> list[int]:
    from websockets.asyncio.client import connect

    seqs: list[int] = []
    async with connect(url, max_size=None) as ws:
        async for text in ws:
            now = time.time() * 1000
            msg = orjson.loads(text)
            if msg.get("op") == "live":
                stop_run.append("live")
            if msg.get("op") != "event":
                continue
            seqs.append(msg["seq"])
            ev = msg["event"]
            if stop_run[1:] and ev["run_id"] == stop_run[1]:
                lat.append(now - ev["ts_ms"])
            final = ev["type"] == "run" and ev["subtype"] in FINAL
            if final and stop_run[1:] and ev["run_id"] == stop_run[1]:
                return seqs
    return seqs


def latency(post_to: Server, watch_on: Server, turns: int) -> list[float]:
    """Latencies (ms) of every record of ``turns`` streamed turns."""
    lat: list[float] = []
    with post_to.client() as c:
        for _ in range(turns):
            chat = new_chat(c, stream_partial_output=True)

            async def one(chat_id: str = chat["id"]) -> None:
                box: list[str] = []
                watcher = asyncio.create_task(_watch(watch_on.ws_url(chat_id), box, lat))
                while not box:
                    await asyncio.sleep(0.01)
                box.append(await asyncio.to_thread(_post, c, chat_id, "write a long story about pipes"))
                await asyncio.wait_for(watcher, 120)

            asyncio.run(one())
    return lat


def fan_out(cluster: Cluster, runs: int) -> tuple[int, int, Counter[str]]:
    """``runs`` runs, each chat watched; returns (records delivered, duplicates or gaps, per worker)."""
    servers = cluster.servers
    clients = [s.client() for s in servers]
    try:
        chats = [new_chat(clients[i % 2]) for i in range(runs)]

        async def main() -> list[tuple[str, list[int]]]:
            boxes: list[list[str]] = [[] for _ in chats]
            watchers = [
                asyncio.create_task(_watch(servers[(i + 1) % 2].ws_url(ch["id"]), boxes[i], []))
                for i, ch in enumerate(chats)
            ]
            while not all(boxes):
                await asyncio.sleep(0.02)
            for i, ch in enumerate(chats):
                boxes[i].append(
                    await asyncio.to_thread(_post, clients[i % 2], ch["id"], f"read notes.txt {i}")
                )
            got = await asyncio.wait_for(asyncio.gather(*watchers), 300)
            return [(ch["id"], seqs) for ch, seqs in zip(chats, got, strict=True)]

        results = asyncio.run(main())
        delivered = bad = 0
        for chat_id, seqs in results:
            stored = [e["seq"] for e in all_events(clients[0], chat_id)]
            delivered += len(seqs)
            bad += 0 if seqs == stored else 1
        workers = Counter(
            r["worker"] for ch in chats for r in clients[0].get(f"/api/chats/{ch['id']}/runs").json()["runs"]
        )
    finally:
        for c in clients:
            c.close()
    return delivered, bad, workers


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--latency-runs", type=int, default=5)
    parser.add_argument("--fan-out", type=int, default=50)
    args = parser.parse_args()
    base = os.environ.get(PG_ENV)
    if not base:
        sys.exit(f"set {PG_ENV} (e.g. to the output of scripts/postgres.sh)")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        root = tmp / "root"
        (root / "project").mkdir(parents=True)
        (root / "project" / "notes.txt").write_text("hello\n")
        dist_url, drop_dist = pg_database(base)
        single_url, drop_single = pg_database(base)
        cluster = Cluster(tmp, dist_url, root.resolve())
        try:
            cluster.server()
            cluster.server()
            for i in (1, 2, 3):
                cluster.worker(f"w{i}", "--concurrency", "4")
            single = Server(tmp, single_url, root.resolve(), cluster.marker, args=["--max-runs", "12"])
            single.sim_env = {"CURSOR_CONFIG_DIR": str(tmp / "cursor-config-single")}
            single.start()
            try:
                rpm_single = throughput([single], args.runs)
                rpm_dist = throughput(cluster.servers, args.runs)
                lat_single = latency(single, single, args.latency_runs)
                lat_dist = latency(cluster.servers[0], cluster.servers[1], args.latency_runs)
                delivered, bad, workers = fan_out(cluster, args.fan_out)
            finally:
                single.stop()
        finally:
            cluster.close()
            drop_dist()
            drop_single()
    print(f"runs per minute ({args.runs} short runs, 12 agents at once):")
    print(f"  single-process serve --max-runs 12:       {rpm_single:7.1f}")
    print(f"  2 API servers + 3 workers (concurrency 4): {rpm_dist:7.1f}")
    print(f"  ratio {rpm_dist / rpm_single:.2f}")
    print(f"record-to-WebSocket latency ({args.latency_runs} streamed turns each):")
    for name, lat in (("single-process", lat_single), ("worker -> other API server", lat_dist)):
        print(
            f"  {name:28s} n={len(lat):5d}  p50 {statistics.median(lat):6.1f} ms  "
            f"p99 {pct(lat, 0.99):6.1f} ms"
        )
    print(f"fan-out: {args.fan_out} runs over 3 workers, one WebSocket per chat on alternating API servers:")
    print(f"  {delivered} records delivered, {bad} chats with a duplicate, a gap or a reordering")
    print(f"  runs per worker: {dict(sorted(workers.items()))}")


if __name__ == "__main__":
    main()
