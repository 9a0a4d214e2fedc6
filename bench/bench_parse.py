"""Parse benchmark: parse_event + Transcript vs bare orjson.loads, in the same run.

The real recordings are repeated to at least 100,000 lines (each repetition is a
full turn, so a Transcript is folded per turn). Three contenders are timed over
the very same lines, interleaved, several rounds; the median of each is kept:

* ``orjson.loads`` of every line — the physical limit of this work;
* ``parse_event`` of every line;
* ``parse_event`` + ``Transcript.add`` (and ``to_result`` per turn);
* ``EventReader.feed`` on the raw bytes in 64 KiB chunks + ``Transcript`` — the
  full path a client takes, framing included.

Then the fold against its baseline (issue 13: ``Transcript.add`` returns what changed): the
``Transcript`` of ``--baseline`` (a git ref; its ``protocol/transcript.py`` is read with
``git show`` and run against today's events module) and today's, over the same events already
parsed (the fold alone) and with ``parse_event``, on the real recordings and on a generated
partial-output turn (``--deltas`` text deltas in segments of 200, a recap and a tool call
after each: what a real session with ``--stream-partial-output`` mostly is). These run in
alternating pairs, timed in the process's CPU time.

Run: ``.venv/bin/python bench/bench_parse.py [--lines N] [--rounds R] [--baseline REF]``
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import orjson

from cursor_agent_api import Transcript, parse_event
from cursor_agent_api.protocol import EventReader

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "cursor-real"
BASELINE = "9e2cb37"
"""The main branch before issue 13's fold (Transcript.add returned None)."""


def baseline_transcript(ref: str) -> Any:
    """The ``Transcript`` class of ``ref``, run against today's modules beside it."""
    source = subprocess.run(
        ["git", "show", f"{ref}:src/cursor_agent_api/protocol/transcript.py"],
        cwd=ROOT, capture_output=True, check=True, text=True,
    ).stdout.replace("from .", "from cursor_agent_api.protocol.")
    module = types.ModuleType(f"transcript_at_{ref}")
    exec(compile(source, f"{ref}:transcript.py", "exec"), module.__dict__)
    return module.Transcript


def partial_output_turn(deltas: int) -> list[bytes]:
    """A generated turn: ``deltas`` text deltas, a recap and a tool call every 200."""
    dumps = orjson.dumps
    sid = {"session_id": "bench"}
    lines = [dumps({"type": "system", "subtype": "init", "model": "m", "cwd": "/w", **sid})]
    segment: list[str] = []
    for i in range(deltas):
        word = f"w{i % 97} "
        segment.append(word)
        lines.append(dumps({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": word}]}, "timestamp_ms": 1_700_000_000_000 + i, **sid}))
        if len(segment) == 200 or i == deltas - 1:
            lines.append(dumps({"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "text", "text": "".join(segment)}]}, "model_call_id": f"m{i}",
                "timestamp_ms": 1_700_000_000_000 + i, **sid}))
            segment.clear()
            call = {"type": "tool_call", "call_id": f"c{i}", "model_call_id": f"m{i}", **sid}
            lines.append(dumps({**call, "subtype": "started", "tool_call": {
                "readToolCall": {"args": {"path": f"f{i}.py"}}}}))
            lines.append(dumps({**call, "subtype": "completed", "tool_call": {
                "readToolCall": {"args": {"path": f"f{i}.py"},
                                 "result": {"success": {"content": "x = 1\n", "totalLines": 1}}}}}))
    lines.append(dumps({"type": "result", "subtype": "success", "result": "done", "duration_ms": 1,
                        "usage": {"inputTokens": 1, "outputTokens": 2}, **sid}))
    return lines


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
    ap.add_argument("--baseline", default=BASELINE, help="git ref of the baseline Transcript")
    ap.add_argument("--deltas", type=int, default=100_000)
    args = ap.parse_args()
    try:
        old_transcript = baseline_transcript(args.baseline)
    except (OSError, subprocess.CalledProcessError) as exc:
        old_transcript = None  # a clone without that history: the fold's pairs are skipped
        print(f"no baseline: git show {args.baseline} failed ({exc})")
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
    # ---- the fold, today's against the baseline's ------------------------------------------
    parsed_turns = [[parse_event(line) for line in turn] for turn in turns]
    delta_turn = partial_output_turn(args.deltas)
    parsed_delta_turn = [parse_event(line) for line in delta_turn]

    def fold(cls: Any, turns_: Iterable[list[Any]]) -> None:
        for turn in turns_:
            t = cls(keep_events=False)
            add = t.add
            for event in turn:
                add(event)
            t.to_result()

    def parse_and_fold(cls: Any, turns_: Iterable[list[bytes]]) -> None:
        for turn in turns_:
            t = cls(keep_events=False)
            add = t.add
            for line in turn:
                add(parse_event(line))
            t.to_result()

    pairs: dict[str, tuple[int, Callable[[Any], None]]] = {
        "real recordings: Transcript.add alone": (n, lambda cls: fold(cls, parsed_turns)),
        "real recordings: parse_event + Transcript": (n, lambda cls: parse_and_fold(cls, turns)),
        "partial output: Transcript.add alone": (
            len(delta_turn), lambda cls: fold(cls, [parsed_delta_turn])),
        "partial output: parse_event + Transcript": (
            len(delta_turn), lambda cls: parse_and_fold(cls, [delta_turn])),
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
    for name in list(contenders)[:4]:
        med = statistics.median(times[name])
        print(f"{name:40} {n / med:12,.0f} {med / base:15.2f}x")

    if old_transcript is None:
        return
    # Today's and the baseline's runs alternate in pairs (which goes first alternates too), and
    # each pair gives a ratio. Timed in CPU time of this process (time.process_time): on a
    # shared machine, the wall clock also counts the time other processes held the core.
    ratios: dict[str, list[float]] = {name: [] for name in pairs}
    best: dict[str, list[float]] = {name: [float("inf"), float("inf")] for name in pairs}
    for r in range(args.rounds * 3):
        for name, (_, run) in pairs.items():
            order = [(0, Transcript), (1, old_transcript)]
            if r % 2:
                order.reverse()
            took = [0.0, 0.0]
            for slot, cls in order:
                start = time.process_time()
                run(cls)
                took[slot] = time.process_time() - start
                best[name][slot] = min(best[name][slot], took[slot])
            ratios[name].append(took[0] / took[1])
    print()
    print(f"the fold, today vs {args.baseline} (partial output: {len(delta_turn):,} lines, "
          f"{args.deltas:,} deltas), {args.rounds * 3} alternating pairs, CPU time")
    print(f"{'contender':44} {'today ns/event':>15} {'baseline':>9} {'ratio of mins':>14} "
          f"{'median ratio':>13}")
    for name, (count, _) in pairs.items():
        new, old = (t / count * 1e9 for t in best[name])
        print(f"{name:44} {new:15,.0f} {old:9,.0f} {new / old:13.2f}x "
              f"{statistics.median(ratios[name]):12.2f}x")


if __name__ == "__main__":
    main()
