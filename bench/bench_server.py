"""Server benchmarks (issue 6), each beside its baseline, in one run.

1. **Throughput**: events/s from the agent's stdout (the simulator replaying a generated
   recording at full speed) through the store to a WebSocket subscriber, against the raw
   insert rate of the same SQLite file (``sqlite3.executemany`` of the same rows, batches
   of 500, one commit per batch: what the database alone can take).
2. **Fan-out**: 50 simultaneous simulated runs, 2 subscribers each; every subscriber must
   receive every record of its chat exactly once (counted, seq by seq).
3. **Memory**: the server's RSS (``/proc/<pid>/status``) sampled over one run of
   1,000,000 events with a subscriber attached; it must stay flat.

Usage::

    .venv/bin/python bench/bench_server.py                    # everything (several minutes)
    .venv/bin/python bench/bench_server.py --only throughput --events 50000

Each server is a real ``cursor-agent-api serve`` subprocess on a random loopback port.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import select
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from cursor_agent_api.sim import wire

BIN = Path(sys.executable).parent
FINAL = {"succeeded", "failed", "cancelled", "interrupted"}


def write_script(path: Path, deltas: int, recap_every: int = 0) -> Path:
    """A recording: init, prompt, ``deltas`` assistant deltas, the final text, a result.

    With ``recap_every`` = K, every K-th delta is instead the segment's recap (an
    ``assistant`` line with ``model_call_id``, as real builds send before a tool call),
    which replaces the segment's deltas in the client's transcript.
    """
    sid = "8ef40118-8378-436d-8ba8-2436b19cc877"
    ts = 1789644625717
    with path.open("wb") as f:
        f.write(wire.encode(wire.system_init(sid, "/ws", "GPT-5 Mini")))
        f.write(wire.encode(wire.user(sid, "count")))
        for i in range(deltas):
            if recap_every and i % recap_every == recap_every - 1:
                k = i // recap_every
                obj = wire.assistant_segment(sid, f"segment {k}. ", f"r-{k}-abcd", ts + i)
            else:
                obj = wire.assistant_delta(sid, f"word{i} ", ts + i)
            f.write(wire.encode(obj, checked=False))
        f.write(wire.encode(wire.assistant_final(sid, "done")))
        f.write(wire.encode(wire.result_success(sid, "r", "done", 1, wire.usage(1, 1))))
    return path


class Serve:
    """A ``cursor-agent-api serve`` subprocess."""

    def __init__(self, tmp: Path, db: Path, script: Path, *args: str) -> None:
        self.token = uuid.uuid4().hex
        root = tmp / "root"
        root.mkdir(exist_ok=True)
        cmd = [
            str(BIN / "cursor-agent-api"),
            "serve",
            "--port",
            "0",
            "--token",
            self.token,
            "--database-url",
            f"sqlite+aiosqlite:///{db}",
            "--root",
            str(root),
            "--agent-binary",
            str(BIN / "cursor-agent-sim"),
            "--log-level",
            "warning",
            "--agent-env",
            f"CURSOR_CONFIG_DIR={tmp / 'cfg'}",
            "--agent-env",
            f"CURSOR_AGENT_SIM_SCRIPT={script}",
            *args,
        ]
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=root, start_new_session=True
        )
        assert self.proc.stdout is not None
        buf = b""
        deadline = time.monotonic() + 60
        while b"Open: " not in buf or not buf.endswith(b"\n"):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"server did not start: {buf!r}")
            ready, _, _ = select.select([self.proc.stdout], [], [], 1)
            if ready:
                buf += os.read(self.proc.stdout.fileno(), 4096)
        line = next(x for x in buf.decode().splitlines() if x.startswith("Open: "))
        self.url = line[6:].split("/?")[0]

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.url, timeout=120, headers={"Authorization": f"token {self.token}"}
        )

    def ws(self, chat_id: str, after: int) -> str:
        return (
            self.url.replace("http", "ws", 1)
            + f"/api/chats/{chat_id}/stream?after_seq={after}&token={self.token}"
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


async def new_chat(c: httpx.AsyncClient) -> str:
    r = await c.post(
        "/api/chats", json={"workspace": ".", "options": {"trust": True, "stream_partial_output": True}}
    )
    r.raise_for_status()
    return str(r.json()["id"])


async def records(server: Serve, chat_id: str) -> AsyncIterator[dict[str, Any]]:
    """Every record of the chat until its run's final record, reconnecting on resync."""
    after = 0
    while True:
        try:
            async with connect(server.ws(chat_id, after), max_size=None) as ws:
                async for text in ws:
                    msg = orjson.loads(text)
                    if msg["op"] != "event":
                        continue
                    rec = msg["event"]
                    after = rec["seq"]
                    yield rec
                    if rec["type"] == "run" and rec["subtype"] in FINAL:
                        return
        except ConnectionClosed:
            pass  # resync (4000): reconnect from the last seq


class Counter:
    """What one subscriber received: seqs in order, each once."""

    def __init__(self) -> None:
        self.count = 0
        self.last = 0
        self.errors = 0
        self.agent_events = 0
        self.end_ts: float = 0.0
        self.status = ""

    def add(self, rec: dict[str, Any]) -> None:
        self.count += 1
        if rec["seq"] != self.last + 1:
            self.errors += 1
        self.last = rec["seq"]
        if rec["source"] == "agent":
            self.agent_events += 1
        elif rec["subtype"] in FINAL:
            self.status = rec["subtype"]
            self.end_ts = time.perf_counter()


async def subscribe(server: Serve, chat_id: str, counter: Counter) -> None:
    async for rec in records(server, chat_id):
        counter.add(rec)


async def wait_hello(server: Serve, chat_id: str) -> None:
    async with connect(server.ws(chat_id, 0)) as ws:
        await ws.recv()


# ---- 1. throughput ---------------------------------------------------------------------------


def raw_insert_rate(db: Path, n: int, payload: dict[str, Any], raw: str) -> float:
    """Rows/s of plain executemany into the server's ``events`` table, batches of 500."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    chat = str(uuid.uuid4())
    conn.execute(
        "INSERT INTO chats (id, workspace, options, title, created_ms, updated_ms, "
        "last_seq, num) VALUES (?, '/w', '{}', 'bench', 0, 0, 0, "
        "(SELECT coalesce(max(num), 0) + 1 FROM chats))",
        (chat,),
    )
    (key,) = conn.execute("SELECT num FROM chats WHERE id = ?", (chat,)).fetchone()
    conn.commit()
    body = orjson.dumps(payload).decode()
    t0 = time.perf_counter()
    seq = 0
    for start in range(0, n, 500):
        rows = []
        for _ in range(min(500, n - start)):
            seq += 1
            rows.append((key, None, seq, 0, "agent", "assistant:delta", None, body, raw))
        conn.execute("UPDATE chats SET last_seq = last_seq + ? WHERE id = ?", (len(rows), chat))
        conn.executemany(
            "INSERT INTO events (chat_key, run_key, seq, ts_ms, source, type, "
            "subtype, payload, raw) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        conn.commit()
    elapsed = time.perf_counter() - t0
    conn.close()
    return n / elapsed


async def bench_throughput(tmp: Path, n: int) -> dict[str, Any]:
    script = write_script(tmp / "tp.ndjson", n)
    db = tmp / "tp.sqlite3"
    server = Serve(tmp, db, script)
    try:
        async with server.http() as c:
            chat = await new_chat(c)
            counter = Counter()
            sub = asyncio.create_task(subscribe(server, chat, counter))
            await wait_hello(server, chat)
            t0 = time.perf_counter()
            r = await c.post(f"/api/chats/{chat}/runs", json={"prompt": "count"})
            r.raise_for_status()
            await sub
            elapsed = counter.end_ts - t0
            page = (
                await c.get(
                    f"/api/chats/{chat}/events", params={"after_seq": 5, "limit": 1, "include_raw": True}
                )
            ).json()
            sample = page["events"][0]
    finally:
        server.stop()
    raw_rate = raw_insert_rate(db, n, sample["payload"], sample["raw"])
    client_rate = await client_only_rate(tmp, script)
    return {
        "client_rate": client_rate,
        "events": counter.agent_events,
        "records": counter.count,
        "errors": counter.errors,
        "status": counter.status,
        "seconds": elapsed,
        "served_rate": counter.agent_events / elapsed,
        "raw_rate": raw_rate,
        "db_mib": db.stat().st_size / 2**20,
    }


async def client_only_rate(tmp: Path, script: Path) -> float:
    """Events/s of the same simulated run read by the client alone (no server, no store)."""
    from cursor_agent_api.client import AsyncCursorAgentClient
    from cursor_agent_api.config import AgentConfig

    root = tmp / "root"
    config = AgentConfig(
        workspace=str(root),
        trust=True,
        stream_partial_output=True,
        agent_binary=str(BIN / "cursor-agent-sim"),
        env={"CURSOR_CONFIG_DIR": str(tmp / "cfg"), "CURSOR_AGENT_SIM_SCRIPT": str(script)},
        keep_events=False,
    )
    count = 0
    t0 = time.perf_counter()
    async for _event in AsyncCursorAgentClient(config).query_stream("count"):
        count += 1
    return count / (time.perf_counter() - t0)


# ---- 2. fan-out ------------------------------------------------------------------------------


async def bench_fanout(tmp: Path, runs: int, per_run: int) -> dict[str, Any]:
    script = write_script(tmp / "fan.ndjson", per_run)
    server = Serve(tmp, tmp / "fan.sqlite3", script, "--max-runs", str(runs))
    try:
        async with server.http() as c:
            chats = [await new_chat(c) for _ in range(runs)]
            counters = {ch: [Counter(), Counter()] for ch in chats}
            subs = [asyncio.create_task(subscribe(server, ch, k)) for ch in chats for k in counters[ch]]
            await asyncio.gather(*(wait_hello(server, ch) for ch in chats))
            rss0 = server.rss_kib()
            t0 = time.perf_counter()
            posted = await asyncio.gather(
                *(c.post(f"/api/chats/{ch}/runs", json={"prompt": "count"}) for ch in chats)
            )
            assert all(p.status_code == 202 for p in posted)
            await asyncio.gather(*subs)
            elapsed = time.perf_counter() - t0
            rss1 = server.rss_kib()
            last = {ch: (await c.get(f"/api/chats/{ch}")).json()["last_seq"] for ch in chats}
    finally:
        server.stop()
    exact = all(
        k.count == last[ch] and k.last == last[ch] and k.errors == 0 for ch in chats for k in counters[ch]
    )
    delivered = sum(k.count for ks in counters.values() for k in ks)
    statuses = {k.status for ks in counters.values() for k in ks}
    return {
        "runs": runs,
        "subscribers": 2 * runs,
        "delivered": delivered,
        "expected": 2 * sum(last.values()),
        "exactly_once": exact,
        "statuses": statuses,
        "seconds": elapsed,
        "rate": delivered / elapsed,
        "agent_rate": sum(k[0].agent_events for k in counters.values()) / elapsed,
        "rss_mib": (rss0 / 1024, rss1 / 1024),
    }


# ---- 3. memory -------------------------------------------------------------------------------


async def bench_memory(tmp: Path, n: int, recap_every: int) -> dict[str, Any]:
    script = write_script(tmp / f"mem{recap_every}.ndjson", n, recap_every)
    server = Serve(tmp, tmp / f"mem{recap_every}.sqlite3", script)
    samples: list[tuple[float, int, int]] = []
    try:
        async with server.http() as c:
            chat = await new_chat(c)
            counter = Counter()
            sub = asyncio.create_task(subscribe(server, chat, counter))
            await wait_hello(server, chat)
            samples.append((0.0, 0, server.rss_kib()))
            t0 = time.perf_counter()
            (await c.post(f"/api/chats/{chat}/runs", json={"prompt": "count"})).raise_for_status()
            while not sub.done():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(sub), 2.0)
                samples.append((time.perf_counter() - t0, counter.count, server.rss_kib()))
            await sub
    finally:
        server.stop()
    return {
        "events": counter.agent_events,
        "errors": counter.errors,
        "status": counter.status,
        "seconds": samples[-1][0],
        "samples": samples,
    }


# ---- report ----------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--only", choices=["throughput", "fanout", "memory"], action="append")
    ap.add_argument("--events", type=int, default=200_000, help="throughput run length")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--run-events", type=int, default=2_000, help="events per fan-out run")
    ap.add_argument("--memory-events", type=int, default=1_000_000)
    args = ap.parse_args()
    only = set(args.only or ["throughput", "fanout", "memory"])
    with tempfile.TemporaryDirectory(prefix="bench-server-") as d:
        tmp = Path(d)
        if "throughput" in only:
            r = asyncio.run(bench_throughput(tmp, args.events))
            print(
                f"\n## Throughput: {r['events']:,} agent events, one subscriber "
                f"({r['status']}, {r['errors']} seq errors)"
            )
            print("| path | events/s |\n|---|---:|")
            print(
                f"| agent stdout -> client -> store (committed) -> WebSocket subscriber "
                f"| {r['served_rate']:,.0f} |"
            )
            print(
                f"| baseline: raw executemany into the same SQLite file (batches of 500) "
                f"| {r['raw_rate']:,.0f} |"
            )
            print(
                f"| context: the same simulated run read by the client alone (no server) "
                f"| {r['client_rate']:,.0f} |"
            )
            print(
                f"ratio served/raw: {r['served_rate'] / r['raw_rate']:.2f}, "
                f"served/client alone: {r['served_rate'] / r['client_rate']:.2f}; "
                f"{r['seconds']:.1f} s; database {r['db_mib']:.0f} MiB"
            )
        if "fanout" in only:
            r = asyncio.run(bench_fanout(tmp, args.runs, args.run_events))
            print(
                f"\n## Fan-out: {r['runs']} simultaneous runs x {args.run_events:,} events, "
                f"{r['subscribers']} subscribers"
            )
            print(
                f"delivered {r['delivered']:,} of {r['expected']:,} records; exactly once, "
                f"in order: {r['exactly_once']}; run statuses {sorted(r['statuses'])}"
            )
            print(
                f"{r['seconds']:.1f} s: {r['agent_rate']:,.0f} agent events/s stored, "
                f"{r['rate']:,.0f} records/s delivered; RSS {r['rss_mib'][0]:.0f} -> "
                f"{r['rss_mib'][1]:.0f} MiB"
            )
        if "memory" in only:
            variants = [
                (100, "a recap (B segment) every 100 deltas: the transcript keeps only the recaps"),
                (0, "one segment of deltas: the client's Transcript keeps every delta string"),
            ]
            for recap_every, label in variants:
                r = asyncio.run(bench_memory(tmp, args.memory_events, recap_every))
                print_memory(r, label)


def print_memory(r: dict[str, Any], label: str) -> None:
    """The RSS table of one memory run."""
    s = r["samples"]
    print(
        f"\n## Memory: one run of {r['events']:,} events ({r['status']}, "
        f"{r['errors']} seq errors), {r['seconds']:.0f} s — {label}"
    )
    print("| progress | records | RSS MiB |\n|---:|---:|---:|")
    total = max(1, s[-1][1])
    shown = set()
    for pct in (0, 10, 25, 50, 75, 90, 100):
        i = min(range(len(s)), key=lambda j: abs(s[j][1] / total * 100 - pct))
        if i in shown:
            continue
        shown.add(i)
        print(f"| {s[i][1] / total:.0%} | {s[i][1]:,} | {s[i][2] / 1024:.1f} |")
    during = [x for x in s if total * 0.1 <= x[1] < total]
    if len(during) >= 2:
        (_, n0, r0), (_, n1, r1) = during[0], during[-1]
        per_event = (r1 - r0) * 1024 / max(1, n1 - n0)
        print(
            f"RSS from 10% to the end of the stream: {r0 / 1024:.1f} -> {r1 / 1024:.1f} MiB "
            f"({per_event:.1f} bytes/event); after the run: {s[-1][2] / 1024:.1f} MiB"
        )


if __name__ == "__main__":
    main()
