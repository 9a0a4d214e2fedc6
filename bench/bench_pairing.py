"""Pairing benchmark: tool calls that all share one id (``<redacted>``) against distinct ids.

A completion used to look at every earlier call of its id (quadratic when a recording
redacted every id to ``<redacted>``); it now looks at that id's running calls only. Both
``Transcript`` classes (``--baseline``'s ``protocol/transcript.py``, read with ``git show`` and
run against today's modules, and this tree's) fold the same parsed events (N ``started`` +
N ``completed`` read calls), alternating, ``--rounds`` times; medians of CPU time.

Run: ``.venv/bin/python bench/bench_pairing.py [--baseline REF] [--sizes 2000,4000,8000]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_parse import baseline_transcript
from cursor_agent_api import Transcript, parse_event
from cursor_agent_api.protocol.events import AgentEvent


def events(n: int, same_id: bool) -> list[AgentEvent]:
    out = []
    for i in range(n):
        cid = "<redacted>" if same_id else f"c{i}"
        call = {"readToolCall": {"args": {"path": "a"}}}
        done = {"readToolCall": {"args": {"path": "a"}, "result": {"success": {"content": "x"}}}}
        for sub, tc in (("started", call), ("completed", done)):
            out.append(parse_event(orjson.dumps({"type": "tool_call", "subtype": sub,
                                                 "call_id": cid, "tool_call": tc,
                                                 "session_id": "s"})))
    return out


def fold(cls: Any, evs: list[AgentEvent]) -> float:
    t0 = time.process_time()
    t = cls(keep_events=False)
    for e in evs:
        t.add(e)
    t.close()
    return time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", default="17ee62e", help="a git ref (default: before the fix)")
    ap.add_argument("--sizes", default="2000,4000,8000")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    sides = {args.baseline: baseline_transcript(args.baseline), "this tree": Transcript}
    print(f"| calls | ids | {' | '.join(sides)} | ratio |")
    print("|---:|---|" + "---:|" * (len(sides) + 1))
    for n in (int(s) for s in args.sizes.split(",")):
        for same in (False, True):
            evs = events(n, same)
            times: dict[str, list[float]] = {name: [] for name in sides}
            for _ in range(args.rounds):
                for name, cls in sides.items():
                    times[name].append(fold(cls, evs))
            med = {name: statistics.median(ts) for name, ts in times.items()}
            before, after = med.values()
            print(f"| {n:,} | {'one shared' if same else 'distinct'} | "
                  + " | ".join(f"{v * 1000:,.1f} ms" for v in med.values())
                  + f" | {before / after:.1f}× |")


if __name__ == "__main__":
    main()
