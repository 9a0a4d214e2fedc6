"""The server's fold of a run's live events, before and after "fold once" (issue 13 point 1).

Run: ``.venv/bin/python bench/bench_fold_once.py [--baseline REV] [--repeats N]``

The turn is ``bench_chat_open.py``'s generated 500-tool-call turn (51,504 lines, 10.8 MB of
NDJSON, partial output). What is measured is the folding a server process does per live event,
in batches of 64 (the writer's batches): the client's fold (a :class:`Transcript` with
``keep_events=False, keep_content=False``, as the server asks) and then, with the code of
``--baseline`` (default ``7297efa``: the server folded each batch again with a
``RunFold`` of its own), ``RunFold.fold(batch)``; with this tree's code, ``RunFold.take``
of the batch with the changes the client's fold returned. Both build the records to store
(``NewRecord``) the same way, so the difference is the second fold. The lines are parsed
before the clock starts (both sides parse them alike).

Each measurement is a fresh interpreter running one side (the baseline's ``src`` from
``git archive``, through ``PYTHONPATH``); each repeat runs both, in a shuffled order, and
the table gives the median over the repeats of µs per event and of after/before. The
``Transcript.add`` calls per event are counted in a separate, untimed pass. Never run as a test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CHILD = r"""
import json, sys, time
from cursor_agent_api.protocol import Transcript, parse_event
from cursor_agent_api.server.turns import RunFold

events = [parse_event(line) for line in open({script!r}, "rb").read().splitlines() if line.strip()]
take = hasattr(RunFold, "take")

def run():
    client = Transcript(keep_events=False, keep_content=False)
    add, fold = client.add, RunFold("chat", "run")
    for i in range(0, len(events), 64):
        batch = events[i:i + 64]
        if take:
            fold.take([(e, add(e)) for e in batch])
        else:
            for e in batch:
                add(e)
            fold.fold(batch)
    return fold

counted = [0]
real = Transcript.add
def counting(self, event):
    counted[0] += 1
    return real(self, event)
Transcript.add = counting
run()
Transcript.add = real
t0 = time.perf_counter()
run()
elapsed = time.perf_counter() - t0
print(json.dumps({{"events": len(events), "adds": counted[0], "s": elapsed}}))
"""


def baseline_src(rev: str, tmp: Path) -> Path:
    dest = tmp / f"base-{rev}"
    dest.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest / "src"


def measure(src: Path, script: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", CHILD.format(script=str(script))],
                         capture_output=True, text=True, check=True, env=env).stdout
    return dict(json.loads(out.splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="7297efa")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from bench_chat_open import write_turn

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        script = write_turn(tmp / "turn.ndjson")
        sides = {"before": baseline_src(args.baseline, tmp), "after": ROOT / "src"}
        runs: dict[str, list[dict[str, float]]] = {k: [] for k in sides}
        for _ in range(args.repeats):
            order = list(sides)
            random.shuffle(order)
            for side in order:
                runs[side].append(measure(sides[side], script))
        n = runs["after"][0]["events"]
        print(f"{n} events, {script.stat().st_size / 1e6:.1f} MB, {args.repeats} repeats\n")
        print("| | Transcript.add per event | µs per event (median) |")
        print("|---|---:|---:|")
        for side in sides:
            us = statistics.median(r["s"] / r["events"] * 1e6 for r in runs[side])
            adds = runs[side][0]["adds"] / runs[side][0]["events"]
            print(f"| {side} | {adds:.2f} | {us:.2f} |")
        ratio = statistics.median(a["s"] / b["s"] for a, b in zip(runs["after"], runs["before"], strict=True))
        print(f"\nafter/before time: {ratio:.2f}× (median of the repeats' ratios)")


if __name__ == "__main__":
    main()
