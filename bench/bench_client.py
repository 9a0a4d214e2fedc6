"""Benchmark of the client against a bare ``Popen`` + ``readline`` + ``orjson.loads`` loop.

Run: ``.venv/bin/python bench/bench_client.py [--quick]``

Both sides read the same stand-in agent: a small script (written to a temp dir) that
reads its stdin to EOF, then writes N stream-json ``assistant`` delta lines, each carrying
the ``time.monotonic_ns()`` at which it was written (CLOCK_MONOTONIC is system-wide on
Linux, so the reader can subtract), then a ``result`` line. Three measures, each repeated
and reported as the median of the repeats, the bare loop beside each client flavour:

1. latency from the agent writing a line to the consumer holding its event: lines paced
   1 ms apart, p50 and p99 per run;
2. throughput in events/s, first event to last, lines written as fast as the pipe takes
   them: the sync ``query_stream`` with ``keep_events`` True (the default) and False, and
   the async one;
3. start-up cost: from the call (``Popen`` / ``query_stream``) to the first event.

Goals (issue 4): p99 latency within 1.5x of bare; throughput at least 0.7 of bare.
Never run as a test: figures depend on the machine; BENCHMARKS.md records them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from cursor_agent_api import AgentConfig, AsyncCursorAgentClient, CursorAgentClient

STAND_IN = r'''#!{python}
import os, sys, time
sys.stdin.buffer.read()
mode = os.environ["BENCH_MODE"]
n = int(os.environ["BENCH_N"])
out = sys.stdout.buffer
head = (b'{{"type":"assistant","message":{{"role":"assistant","content":'
        b'[{{"type":"text","text":"token "}}]}},"session_id":"bench","timestamp_ms":1,"t":')
if mode == "latency":
    interval = float(os.environ.get("BENCH_INTERVAL", "0.001"))
    write, flush, mono = out.write, out.flush, time.monotonic_ns
    for i in range(n):
        write(head + str(mono()).encode() + b"}}\n")
        flush()
        time.sleep(interval)
else:
    line = head + b"0}}\n"
    per = max(1, 65536 // len(line))
    block = line * per
    full, rest = divmod(n, per)
    for _ in range(full):
        out.write(block)
    out.write(line * rest)
out.write(b'{{"type":"result","subtype":"success","result":"done","session_id":"bench"}}\n')
out.flush()
'''


def make_stand_in(directory: str) -> str:
    path = Path(directory) / "stand_in_agent"
    path.write_text(STAND_IN.format(python=sys.executable))
    path.chmod(0o755)
    return str(path)


def bench_env(mode: str, n: int) -> dict[str, str]:
    return {**os.environ, "BENCH_MODE": mode, "BENCH_N": str(n)}


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    k = max(0, min(len(values) - 1, round(p / 100 * (len(values) - 1))))
    return values[k]


# ---- the bare baseline -----------------------------------------------------------------


def bare(agent: str, mode: str, n: int) -> tuple[list[int], float, float]:
    """(latencies ns, events/s first->last, seconds call->first event)."""
    t_call = time.monotonic()
    proc = subprocess.Popen([agent, "--print", "--output-format", "stream-json"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=bench_env(mode, n), start_new_session=True)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"prompt")
    proc.stdin.close()
    lat: list[int] = []
    count = 0
    first = last = 0.0
    mono = time.monotonic_ns
    loads = orjson.loads
    readline = proc.stdout.readline
    while True:
        line = readline()
        if not line:
            break
        obj = loads(line)
        now = mono()
        if count == 0:
            first = now / 1e9
        count += 1
        t = obj.get("t")
        if t:
            lat.append(now - t)
        last = now / 1e9
    proc.wait()
    rate = (count - 1) / (last - first) if last > first else float("nan")
    return lat, rate, first - t_call


# ---- the client --------------------------------------------------------------------------


def client_sync(agent: str, mode: str, n: int, keep: bool) -> tuple[list[int], float, float]:
    config = AgentConfig(agent_binary=agent, env=bench_env(mode, n), keep_events=keep)
    lat: list[int] = []
    count = 0
    first = last = 0.0
    mono = time.monotonic_ns
    t_call = time.monotonic()  # a fresh client: its loop thread's start is part of the cost
    with CursorAgentClient(config) as client:
        with client.query_stream("prompt") as stream:
            for event in stream:
                now = mono()
                if count == 0:
                    first = now / 1e9
                count += 1
                t = event.data.get("t")
                if t:
                    lat.append(now - t)
                last = now / 1e9
        result = stream.result
        assert result is not None and result.success, result
    rate = (count - 1) / (last - first) if last > first else float("nan")
    return lat, rate, first - t_call


def client_async(agent: str, mode: str, n: int, keep: bool) -> tuple[list[int], float, float]:
    config = AgentConfig(agent_binary=agent, env=bench_env(mode, n), keep_events=keep)

    async def main() -> tuple[list[int], float, float]:
        lat: list[int] = []
        count = 0
        first = last = 0.0
        mono = time.monotonic_ns
        client = AsyncCursorAgentClient(config)
        t_call = time.monotonic()
        stream = client.query_stream("prompt")
        async for event in stream:
            now = mono()
            if count == 0:
                first = now / 1e9
            count += 1
            t = event.data.get("t")
            if t:
                lat.append(now - t)
            last = now / 1e9
        assert stream.result is not None and stream.result.success
        rate = (count - 1) / (last - first) if last > first else float("nan")
        return lat, rate, first - t_call

    return asyncio.run(main())


# ---- driver ------------------------------------------------------------------------------

Runner = Callable[[str, str, int], tuple[list[int], float, float]]

FLAVOURS: list[tuple[str, Runner]] = [
    ("bare Popen+readline+orjson", bare),
    ("client sync, keep_events=True", lambda a, m, n: client_sync(a, m, n, True)),
    ("client sync, keep_events=False", lambda a, m, n: client_sync(a, m, n, False)),
    ("client async, keep_events=True", lambda a, m, n: client_async(a, m, n, True)),
    ("client async, keep_events=False", lambda a, m, n: client_async(a, m, n, False)),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer lines and repeats")
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args()
    repeats = args.repeats or (3 if args.quick else 7)
    n_lat = 500 if args.quick else 2000
    n_tput = 50_000 if args.quick else 200_000
    n_start = 5 if args.quick else 20

    with tempfile.TemporaryDirectory() as tmp:
        agent = make_stand_in(tmp)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, repeats={repeats}")
        print(f"\n(1) latency, {n_lat} lines 1 ms apart: median over repeats of p50 / p99 (µs)")
        base99 = 0.0
        for name, fn in FLAVOURS:
            p50s, p99s = [], []
            for _ in range(repeats):
                lat, _, _ = fn(agent, "latency", n_lat)
                p50s.append(pct(lat, 50) / 1e3)
                p99s.append(pct(lat, 99) / 1e3)
            p50, p99 = statistics.median(p50s), statistics.median(p99s)
            if fn is bare:
                base99 = p99
            ratio = p99 / base99 if base99 else float("nan")
            print(f"  {name:34s} p50 {p50:8.1f}  p99 {p99:8.1f}  p99 ratio {ratio:5.2f}x"
                  f"  (goal <= 1.5x)")

        print(f"\n(2) throughput, {n_tput} lines: median events/s over repeats")
        base_rate = 0.0
        for name, fn in FLAVOURS:
            rates = [fn(agent, "throughput", n_tput)[1] for _ in range(repeats)]
            rate = statistics.median(rates)
            if fn is bare:
                base_rate = rate
            print(f"  {name:34s} {rate:12,.0f} ev/s  ratio {rate / base_rate:5.2f}"
                  f"  (goal >= 0.7)")

        print(f"\n(3) start-up to first event, median of {n_start} (ms)")
        base_start = 0.0
        for name, fn in FLAVOURS[:2] + FLAVOURS[3:4]:
            starts = [fn(agent, "throughput", 10)[2] * 1e3 for _ in range(n_start)]
            start = statistics.median(starts)
            if fn is bare:
                base_start = start
            print(f"  {name:34s} {start:8.2f} ms  (+{start - base_start:6.2f} ms)")


if __name__ == "__main__":
    main()
