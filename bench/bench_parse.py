"""Parse benchmark: parse_event + Transcript vs bare orjson.loads, in the same run.

The real recordings are repeated to at least 100,000 lines (each repetition is a
full turn, so a Transcript is folded per turn). Three contenders are timed over
the very same lines, interleaved, several rounds; the median of each is kept:

* ``orjson.loads`` of every line — the physical limit of this work;
* ``parse_event`` of every line;
* ``parse_event`` + ``Transcript.add`` (and ``to_result`` per turn);
* ``EventReader.feed`` on the raw bytes in 64 KiB chunks + ``Transcript`` — the
  full path a client takes, framing included.

Run: ``.venv/bin/python bench/bench_parse.py [--lines N] [--rounds R]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from cursor_agent_api import Transcript, parse_event
from cursor_agent_api.protocol import EventReader

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "cursor-real"


def load_turns(min_lines: int) -> tuple[list[list[bytes]], bytes]:
    turns = [
        [line for line in p.read_bytes().split(b"\n") if line.strip()]
        for p in sorted(DATA.glob("*.ndjson"))
    ]
    out: list[list[bytes]] = []
    total = 0
    while total < min_lines:
        for t in turns:
            out.append(t)
            total += len(t)
    blob = b"".join(b"\n".join(t) + b"\n" for t in out)
    return out, blob


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    turns, blob = load_turns(args.lines)
    lines = [line for t in turns for line in t]
    n = len(lines)

    def bare() -> None:
        loads = orjson.loads
        for line in lines:
            loads(line)

    def events_only() -> None:
        for line in lines:
            parse_event(line)

    def with_transcript() -> None:
        for turn in turns:
            t = Transcript(keep_events=False)
            for line in turn:
                t.add(parse_event(line))
            t.to_result()

    def full_path() -> None:
        reader = EventReader()
        t = Transcript(keep_events=False)
        for i in range(0, len(blob), 65536):
            for event in reader.feed(blob[i : i + 65536]):
                t.add(event)
                if event.is_result:
                    t.to_result()
                    t = Transcript(keep_events=False)
        reader.close()

    contenders: dict[str, Callable[[], None]] = {
        "orjson.loads (baseline)": bare,
        "parse_event": events_only,
        "parse_event + Transcript": with_transcript,
        "EventReader + Transcript (bytes in)": full_path,
    }
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(args.rounds):
        for name, fn in contenders.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    base = statistics.median(times["orjson.loads (baseline)"])
    print(f"{n:,} lines ({len(blob) / 1e6:.1f} MB), {len(turns):,} turns, "
          f"median of {args.rounds} rounds")
    print(f"{'contender':40} {'events/s':>12} {'ratio to orjson':>16}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:40} {n / med:12,.0f} {med / base:15.2f}x")


if __name__ == "__main__":
    main()
