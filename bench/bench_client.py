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
from collections.abc import Callable, Sequence
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


def config_env(mode: str, n: int) -> dict[str, str | None]:
    """``bench_env`` typed as ``AgentConfig.env`` takes it."""
    return {**bench_env(mode, n)}


def pct(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(values) - 1, round(p / 100 * (len(values) - 1))))
    return ordered[k]


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


def bare_keep(agent: str, mode: str, n: int) -> tuple[list[int], float, float]:
    """The bare loop, but keeping every parsed object (what ``keep_events=True`` does)."""
    proc = subprocess.Popen([agent], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=bench_env(mode, n), start_new_session=True)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    kept = []
    count = 0
    first = last = 0.0
    for line in iter(proc.stdout.readline, b""):
        kept.append(orjson.loads(line))
        now = time.monotonic()
        if count == 0:
            first = now
        count += 1
        last = now
    proc.wait()
    return [], (count - 1) / (last - first), 0.0


def raw_asyncio(agent: str, mode: str, n: int) -> tuple[list[int], float, float]:
    """The asyncio floor: ``loop.subprocess_exec`` + split + ``orjson.loads``, no client."""

    async def main() -> tuple[list[int], float, float]:
        loop = asyncio.get_running_loop()
        lat: list[int] = []
        state = {"count": 0, "first": 0.0, "last": 0.0}
        done: asyncio.Future[None] = loop.create_future()
        buf = bytearray()

        class Proto(asyncio.SubprocessProtocol):
            def pipe_data_received(self, fd: int, data: bytes | str) -> None:
                assert isinstance(data, bytes)
                buf.extend(data)
                *lines, rest = bytes(buf).split(b"\n")
                buf[:] = rest
                now = time.monotonic_ns()
                for line in lines:
                    obj = orjson.loads(line)
                    if state["count"] == 0:
                        state["first"] = now / 1e9
                    state["count"] += 1
                    state["last"] = now / 1e9
                    if obj.get("t"):
                        lat.append(now - obj["t"])

            def process_exited(self) -> None:
                done.set_result(None)

        transport, _ = await loop.subprocess_exec(
            Proto, agent, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env=bench_env(mode, n), start_new_session=True)
        pipe = transport.get_pipe_transport(0)
        assert pipe is not None
        pipe.close()
        await done
        await asyncio.sleep(0.05)
        transport.close()
        count = state["count"]
        return lat, (count - 1) / (state["last"] - state["first"]), 0.0

    return asyncio.run(main())


# ---- the client --------------------------------------------------------------------------


def client_sync(agent: str, mode: str, n: int, keep: bool) -> tuple[list[int], float, float]:
    config = AgentConfig(agent_binary=agent, env=config_env(mode, n), keep_events=keep)
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
    config = AgentConfig(agent_binary=agent, env=config_env(mode, n), keep_events=keep)

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
    ("  (context) raw asyncio, no client", raw_asyncio),
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
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, repeats={repeats}; "
              "the flavours take turns within each repeat, so they share the machine's noise")

        print(f"\n(1) latency, {n_lat} lines 1 ms apart: median over repeats of p50 / p99 (µs)")
        p50s: dict[str, list[float]] = {name: [] for name, _ in FLAVOURS}
        p99s: dict[str, list[float]] = {name: [] for name, _ in FLAVOURS}
        for _ in range(repeats):
            for name, fn in FLAVOURS:
                lat, _, _ = fn(agent, "latency", n_lat)
                p50s[name].append(pct(lat, 50) / 1e3)
                p99s[name].append(pct(lat, 99) / 1e3)
        base50 = statistics.median(p50s[FLAVOURS[0][0]])
        base99 = statistics.median(p99s[FLAVOURS[0][0]])
        for name, _ in FLAVOURS:
            p50, p99 = statistics.median(p50s[name]), statistics.median(p99s[name])
            print(f"  {name:36s} p50 {p50:7.1f} ({p50 / base50:4.2f}x)  "
                  f"p99 {p99:7.1f} ({p99 / base99:4.2f}x, goal <= 1.5x)")

        print(f"\n(2) throughput, {n_tput} lines: median events/s over repeats")
        tput = [*FLAVOURS[:2], ("  (context) bare, keeping every object", bare_keep),
                *FLAVOURS[2:]]
        rates: dict[str, list[float]] = {name: [] for name, _ in tput}
        for _ in range(repeats):
            for name, fn in tput:
                rates[name].append(fn(agent, "throughput", n_tput)[1])
        base_rate = statistics.median(rates[FLAVOURS[0][0]])
        for name, _ in tput:
            rate = statistics.median(rates[name])
            print(f"  {name:36s} {rate:10,.0f} ev/s  ({rate / base_rate:4.2f} of bare, "
                  "goal >= 0.7)")

        print(f"\n(3) start-up to first event, median of {n_start} (ms)")
        starters = [FLAVOURS[0], FLAVOURS[2], FLAVOURS[4]]
        starts: dict[str, list[float]] = {name: [] for name, _ in starters}
        for _ in range(n_start):
            for name, fn in starters:
                starts[name].append(fn(agent, "throughput", 10)[2] * 1e3)
        base_start = statistics.median(starts[FLAVOURS[0][0]])
        for name, _ in starters:
            start = statistics.median(starts[name])
            print(f"  {name:36s} {start:7.2f} ms  ({start - base_start:+6.2f} ms)")


if __name__ == "__main__":
    main()
