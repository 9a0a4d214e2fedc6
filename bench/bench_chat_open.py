"""Opening a long chat, its database and its ingest (issue 13, point 2), beside the code before.

The turn: a generated 500-tool-call turn written with :mod:`cursor_agent_api.sim.wire`
(init, prompt, then 500 times: ~100 assistant deltas, the segment's recap, a read's
``started`` and ``completed``; the final message and the result): 51,504 lines, about
10.8 MB of NDJSON. The simulator replays it at full speed; a chat with
``stream_partial_output`` gets every line, a chat without it the same turn without the
deltas (1,504 lines): what the person sees is the same.

For each code (``after``: this checkout; ``before``: ``--before-src``, another checkout's
``src``) and each variant (partial output or not), a real ``cursor-agent-api serve`` on an
SQLite file in a temporary directory:

* **write path** (first, for each code, in a child process running that code): the
  server's own write of the turn's agent events, in process: the events as the client
  yields them (the NDJSON parsed by the protocol's ``EventReader``: not timed), then batch
  by batch (500 events, the runner's ``batch_max_events``) ``RunFold.take`` of the
  changes the client's fold returned (older code: ``RunFold.fold``, the server's own fold)
  and ``append_folded`` (the records, the turn's state and the run's fields, one transaction;
  no WebSocket subscriber), into a fresh SQLite file, after a warm-up chat of 2,000 events
  (a running server has compiled its statements), then, as ``serve`` does once started,
  the start-up objects frozen out of the garbage collector's walks (where the code has
  ``cli.serve.freeze_start_up_objects``); beside it, in the same child, raw
  ``sqlite3`` ``executemany`` of the very rows it stored into a fresh copy of the
  ``events`` table (batches of 500, each with the chat's ``last_seq`` bump and one
  commit, WAL, ``synchronous=NORMAL``). ``--write-repeats`` times; medians of the rates
  and of the per-repeat ratios;
* **ingest**: agent events per second, from the prompt's POST to the run's final record
  seen by a WebSocket subscriber (the simulator, the client's parse, the WebSocket
  included); beside it, raw SQLite inserts of the same rows as above;
* **database**: the SQLite file's size after a WAL checkpoint, against the NDJSON's bytes;
* **open**: headless Chromium (``/usr/bin/chromium``) signed in on the chat list; the time
  from the click on the chat to its final text visible, median of ``--opens`` opens
  (each a fresh page).

Usage::

    git archive main src | tar -x -C /tmp/base
    .venv/bin/python bench/bench_chat_open.py --before-src /tmp/base/src
    .venv/bin/python bench/bench_chat_open.py --no-serve   # the write path only
"""

from __future__ import annotations

import argparse
import asyncio
import os
import select
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
from websockets.asyncio.client import connect

from cursor_agent_api.sim import wire

BIN = Path(sys.executable).parent
FINAL = {"succeeded", "failed", "cancelled", "interrupted"}
MARKER = "ALL-500-CALLS-DONE"
SID = "8ef40118-8378-436d-8ba8-2436b19cc877"


def write_turn(path: Path, calls: int = 500, deltas: int = 100) -> Path:
    """The generated turn (see the module doc); returns ``path``."""
    ts = 1789644625717
    words = ["alpha ", "beta ", "gamma ", "delta ", "eps "]
    content = "".join(f"line {i}: some file content here\n" for i in range(74))
    with path.open("wb") as f:
        f.write(wire.encode(wire.system_init(SID, "/ws", "GPT-5 Mini")))
        f.write(wire.encode(wire.user(SID, "read everything")))
        for k in range(calls):
            text = []
            for i in range(deltas):
                ts += 1
                w = words[(k + i) % len(words)]
                text.append(w)
                f.write(wire.encode(wire.assistant_delta(SID, w, ts), checked=False))
            mc = f"m-{k}-abcd"
            ts += 1
            f.write(wire.encode(wire.assistant_segment(SID, "".join(text), mc, ts), checked=False))
            args = wire.read_args(f"/ws/file{k}.txt")
            f.write(wire.encode(wire.tool_call_started(
                SID, f"call_{k}", "readToolCall", args, model_call_id=mc, started_at_ms=ts,
                timestamp_ms=ts)))
            done = wire.tool_call_completed(
                SID, f"call_{k}", "readToolCall", wire.read_success(f"/ws/file{k}.txt", content),
                args=args, completed_at_ms=ts + 1, model_call_id=mc, started_at_ms=ts, timestamp_ms=ts,
            )
            f.write(wire.encode(done))
        final = f"Read all {calls} files. {MARKER}"
        f.write(wire.encode(wire.assistant_final(SID, final)))
        f.write(wire.encode(wire.result_success(SID, "r", final, 1, wire.usage(100, 200))))
    return path


class Serve:
    """A ``cursor-agent-api serve`` subprocess running the code in ``src`` (or this checkout's)."""

    def __init__(self, tmp: Path, db: Path, script: Path, src: str | None) -> None:
        self.token = uuid.uuid4().hex
        root = tmp / "root"
        root.mkdir(exist_ok=True)
        cmd = [
            str(BIN / "cursor-agent-api"), "serve", "--port", "0", "--token", self.token,
            "--database-url", f"sqlite+aiosqlite:///{db}", "--root", str(root),
            "--log-level", "warning",  # (--simulate: the bundled simulator, replaying the script)
            "--agent-env", f"CURSOR_CONFIG_DIR={tmp / 'cfg'}",
            "--agent-env", f"CURSOR_AGENT_SIM_SCRIPT={script}", "--simulate",
        ]
        env = dict(os.environ)
        if src is not None:
            env["PYTHONPATH"] = src
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=root, env=env,
            start_new_session=True,
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


async def run_turn(server: Serve, partial: bool) -> tuple[str, int, float]:
    """Run the turn in a new chat; returns the chat id, its agent events and the seconds
    from the POST to the final record seen on the WebSocket."""
    headers = {"Authorization": f"token {server.token}"}
    async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=600) as c:
        r = await c.post(
            "/api/chats",
            json={"workspace": ".", "options": {"trust": True, "stream_partial_output": partial}},
        )
        r.raise_for_status()
        chat = str(r.json()["id"])
        base = server.url.replace("http", "ws", 1)
        ws_url = f"{base}/api/chats/{chat}/stream?after_seq=0&token={server.token}"
        agent = 0
        async with connect(ws_url, max_size=None) as ws:
            await ws.recv()  # hello
            t0 = time.perf_counter()
            (await c.post(f"/api/chats/{chat}/runs", json={"prompt": "go"})).raise_for_status()
            async for text in ws:
                msg = orjson.loads(text)
                if msg["op"] != "event":
                    continue
                rec = msg["event"]
                if rec["source"] == "agent":
                    agent += 1
                elif rec["type"] == "run" and rec["subtype"] in FINAL:
                    assert rec["subtype"] == "succeeded", rec["subtype"]
                    return chat, agent, time.perf_counter() - t0
    raise RuntimeError("the stream ended before the run")


def db_bytes(db: Path) -> int:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return db.stat().st_size + sum(p.stat().st_size for p in db.parent.glob(db.name + "-*"))


def raw_insert_rate(db: Path, tmp: Path) -> float:
    """Rows/s of plain ``executemany`` of the stored ``events`` rows into a fresh copy."""
    return len(_events_schema(db)[2]) / raw_inserts(db, tmp)[0]


def _events_schema(db: Path) -> tuple[list[str], list[str], list[tuple[Any, ...]]]:
    """The ``events`` table's DDL, its columns and its agent rows, as stored in ``db``."""
    src = sqlite3.connect(db)
    schema = [
        r[0]
        for r in src.execute(
            "SELECT sql FROM sqlite_master WHERE tbl_name = 'events' AND sql IS NOT NULL ORDER BY type DESC"
        )
    ]
    cols = [r[1] for r in src.execute("PRAGMA table_info(events)") if r[1] != "id"]
    key = "chat_key" if "chat_key" in cols else "chat_id"
    order = "chat_key DESC" if key == "chat_key" else "id DESC"  # the last chat written
    (last,) = src.execute(f"SELECT {key} FROM events ORDER BY {order} LIMIT 1").fetchone()
    agent = "source IS NOT 'server'"  # a line stored alone has no source (it is the agent's)
    rows = src.execute(
        f"SELECT {', '.join(cols)} FROM events WHERE {agent} AND {key} = ? ORDER BY seq", (last,)
    ).fetchall()
    src.close()
    return schema, cols, rows


def raw_inserts(db: Path, tmp: Path, batch: int = 500) -> tuple[float, float]:
    """Seconds (and CPU seconds of this process) to insert the ``events`` rows of ``db``
    (its agent records, as stored) with plain ``sqlite3`` ``executemany`` into a fresh copy
    of the table: batches of ``batch``, each with the chat's ``last_seq`` bump and one
    commit, WAL and ``synchronous=NORMAL`` as the server's."""
    schema, cols, rows = _events_schema(db)
    out = tmp / f"raw-{uuid.uuid4().hex[:6]}.sqlite3"
    conn = sqlite3.connect(out)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    key = "chat_key" if "chat_key" in cols else "chat_id"
    conn.execute("CREATE TABLE chats (id PRIMARY KEY, last_seq INTEGER)")
    for sql in schema:  # foreign keys are not enforced here (sqlite3's default): no runs table
        conn.execute(sql)
    chat = rows[0][cols.index(key)]
    conn.execute("INSERT INTO chats VALUES (?, 0)", (chat,))
    conn.commit()
    insert = f"INSERT INTO events ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
    t0, c0 = time.perf_counter(), time.process_time()
    for start in range(0, len(rows), batch):
        part = rows[start : start + batch]
        conn.execute("UPDATE chats SET last_seq = last_seq + ? WHERE id = ?", (len(part), chat))
        conn.executemany(insert, part)
        conn.commit()
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    conn.close()
    out.unlink()
    return elapsed, cpu


async def server_writes(script: Path, db: Path, batch: int = 500) -> tuple[int, float, float]:
    """The server's own write path for the turn's agent events, in this process: the events
    as the client yields them (each line parsed by the protocol's reader, not timed), then,
    batch by batch as the runner hands them to the store, :meth:`RunFold.take` (the records
    of the events and the changes the client's fold returned; older code: :meth:`RunFold.fold`,
    the server's own fold) and :func:`append_folded` (the records, the turn's state and the
    run's fields in one transaction; no subscriber). Returns the events, the seconds and
    the CPU seconds of the process meanwhile (the event loop's thread and the writer's)."""
    from cursor_agent_api.protocol import Transcript
    from cursor_agent_api.protocol.reader import EventReader
    from cursor_agent_api.server.hub import Hub
    from cursor_agent_api.server.log import EventLog
    from cursor_agent_api.server.runs import run_record
    from cursor_agent_api.server.store import Store
    from cursor_agent_api.server.turns import RunFold, append_folded

    # The events reach the store a batch at a time, as the runner hands them over: each batch
    # is parsed just before it is written (not timed), so that only a batch's events are
    # alive at once, as in the server (all 51,504 at once would make the garbage collector's
    # passes, which walk every live object, cost what the server does not pay).
    lines = script.read_bytes().splitlines(keepends=True)

    def batches(count: int) -> Iterator[list[Any]]:
        for start in range(0, min(count, len(lines)), batch):  # (a short turn: its lines)
            parser = EventReader(max_line_bytes=64 * 1024 * 1024)
            yield parser.feed(b"".join(lines[start : start + batch])) + parser.close()

    store = Store(f"sqlite+aiosqlite:///{db}")
    await store.start()
    try:
        log = EventLog(store, Hub())

        async def write(count: int) -> tuple[float, float]:
            chat = await store.create_chat(workspace=str(db.parent), model=None, options={}, title="t")
            run, _ = await store.create_run(chat["id"], "go", lambda r: run_record("queued", r))
            fold = RunFold(chat["id"], run["id"])
            # Since the server stores the changes of the client's one fold (RunFold.take), the
            # fold is the client's work, done as the events are read: not timed here. Older
            # code (RunFold.fold) folds in the server, inside the timed write.
            client_fold = Transcript(keep_events=False, keep_content=False) \
                if hasattr(fold, "take") else None
            elapsed = cpu = 0.0
            for events in batches(count):
                if client_fold is not None:
                    pairs = [(e, client_fold.add(e)) for e in events]
                    t0, c0 = time.perf_counter(), time.process_time()
                    await append_folded(log, fold.take(pairs))
                else:
                    t0, c0 = time.perf_counter(), time.process_time()
                    # (the code before 7297efa folded the batch again: RunFold.fold)
                    await append_folded(log, fold.fold(events))  # type: ignore[attr-defined]
                elapsed += time.perf_counter() - t0
                cpu += time.process_time() - c0
                del events
            return elapsed, cpu

        # a server has run before: its statements are compiled, its modules imported
        await write(4 * batch)
        try:  # and, since `serve` does it once started, its start-up objects are frozen
            from cursor_agent_api.cli.serve import freeze_start_up_objects
        except ImportError:  # older code: its server did not
            pass
        else:
            freeze_start_up_objects()
        elapsed, cpu = await write(len(lines))
    finally:
        await store.close()
    return len(lines), elapsed, cpu


def write_path(script: Path, src: str | None, repeats: int) -> dict[str, Any]:
    """The server's write path against raw inserts of the same rows, ``repeats`` times
    each, alternating; a child process runs the code of ``src`` (or this checkout's)."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = src
    ratios, rates, raws, cpu_ratios, cpus = [], [], [], [], []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, __file__, "--write-path-once", str(script)],
            env=env, check=True, capture_output=True, text=True,
        ).stdout
        n, server_s, raw_s, server_cpu, raw_cpu = (float(x) for x in out.split())
        rates.append(n / server_s)
        raws.append(n / raw_s)
        ratios.append(raw_s / server_s)
        cpus.append(server_cpu)
        cpu_ratios.append(raw_cpu / server_cpu)
    return {
        "events": int(n),
        "server writes/s": round(statistics.median(rates)),
        "raw inserts/s": round(statistics.median(raws)),
        "server/raw": round(statistics.median(ratios), 3),
        "ratios": [round(r, 3) for r in ratios],
        # CPU seconds of the process (all its threads) in the timed sections: steadier than
        # wall time on a shared machine; raw's CPU over the server's
        "server CPU s": round(statistics.median(cpus), 3),
        "raw CPU / server CPU": round(statistics.median(cpu_ratios), 3),
        "CPU ratios": [round(r, 3) for r in cpu_ratios],
    }


def _write_path_once(script: Path) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-write-"))
    db = tmp / "server.sqlite3"
    n, server_s, server_cpu = asyncio.run(server_writes(script, db))
    raw_s, raw_cpu = raw_inserts(db, tmp)
    print(n, server_s, raw_s, server_cpu, raw_cpu)


def open_times(server: Serve, chat: str, opens: int) -> list[float]:
    """Seconds from the click on the chat to its final text visible, ``opens`` times."""
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=os.environ.get("CURSOR_AGENT_API_CHROMIUM", "/usr/bin/chromium"),
            headless=True, args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )
        try:
            context = browser.new_context(viewport={"width": 1100, "height": 800})
            page = context.new_page()
            page.goto(f"{server.url}/?token={server.token}")  # signs in (the cookie)
            for _ in range(opens):
                page = context.new_page()
                page.goto(f"{server.url}/")
                link = page.locator(f'a[href="#/chat/{chat}"]')
                link.wait_for(timeout=60_000)
                t0 = time.perf_counter()
                link.click()
                page.locator(".msg.assistant", has_text=MARKER).wait_for(state="visible", timeout=600_000)
                times.append(time.perf_counter() - t0)
                page.close()
        finally:
            browser.close()
    return times


def measure(code: str, src: str | None, partial: bool, script: Path, opens: int) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix=f"bench-open-{code}-"))
    db = tmp / "server.sqlite3"
    server = Serve(tmp, db, script, src)
    try:
        chat, agent, seconds = asyncio.run(run_turn(server, partial))
        opened = open_times(server, chat, opens)
    finally:
        server.stop()
    size = db_bytes(db)
    raw = raw_insert_rate(db, tmp)
    ingest = agent / seconds
    return {
        "code": code,
        "partial": partial,
        "events": agent,
        "ingest/s": round(ingest),
        "raw/s": round(raw),
        "ingest/raw": round(ingest / raw, 3),
        "db MB": round(size / 1e6, 2),
        "db/ndjson": round(size / script.stat().st_size, 2),
        "open s (median)": round(statistics.median(opened), 3),
        "opens": [round(t, 3) for t in opened],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before-src", help="the src/ of the code before (adds the 'before' rows)")
    parser.add_argument("--opens", type=int, default=5)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--only", choices=["before", "after"])
    parser.add_argument("--write-repeats", type=int, default=5, help="repeats of the write-path measure")
    parser.add_argument("--no-serve", action="store_true", help="the write path only (no server, no page)")
    parser.add_argument("--write-path-once", metavar="NDJSON", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write_path_once:
        _write_path_once(Path(args.write_path_once))
        return
    work = Path(tempfile.mkdtemp(prefix="bench-open-"))
    script = write_turn(work / "turn.ndjson", args.calls)
    lines = script.read_bytes().count(b"\n")
    print(f"turn: {lines} lines, {script.stat().st_size / 1e6:.1f} MB of NDJSON")
    codes: list[tuple[str, str | None]] = [("after", None)]
    if args.before_src:
        codes.insert(0, ("before", args.before_src))
    for code, src in codes:
        if args.only and code != args.only:
            continue
        print({"code": code, "write path": write_path(script, src, args.write_repeats)}, flush=True)
    if args.no_serve:
        return
    rows = []
    for code, src in codes:
        if args.only and code != args.only:
            continue
        for partial in (True, False):
            row = measure(code, src, partial, script, args.opens)
            print(row, flush=True)
            rows.append(row)
    keys = [k for k in rows[0] if k != "opens"]
    print(" | ".join(keys))
    for row in rows:
        print(" | ".join(str(row[k]) for k in keys))


if __name__ == "__main__":
    main()
