"""What keeping a turn's events costs: memory, folding time, and reading them back.

Run: ``.venv/bin/python bench/bench_kept_events.py [--baseline REV] [--lines N] [--repeats K]``

Each side (this tree's ``src``, and ``--baseline``'s from ``git archive``) runs in a fresh
interpreter, in a shuffled order within each repeat: ``Transcript.from_chunks`` of ``--lines``
assistant delta lines (the shape of ``bench_client.py``'s, ~150 bytes) in 64 KiB chunks (as a
pipe delivers them) with ``keep_events`` False, then True; then every kept event's ``data``
read once (``for e in t.events``). Figures:

* **kept bytes per event**: ``tracemalloc``'s traced memory held by the transcript with
  ``keep_events=True`` minus with ``False``, per event (the NDJSON line itself is ~150 bytes);
* **fold µs per line**: CPU time of ``from_chunks`` per line, ``keep_events`` True and False;
  their difference is what keeping costs while the turn runs (mostly the garbage collector's
  full collections over the kept objects);
* **read µs per event**: CPU time of reading every kept event's ``data`` once, afterwards.

Medians over the repeats. Never run as a test.
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

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys, time, tracemalloc
import orjson
from cursor_agent_api.protocol import Transcript
n = int(sys.argv[1])
data = b"".join(orjson.dumps({"type": "assistant", "message": {"role": "assistant", "content": [
    {"type": "text", "text": "token "}]}, "session_id": "bench", "timestamp_ms": i,
    "t": 12345678901234}) + b"\n" for i in range(n))
chunks = [data[i:i + 65536] for i in range(0, len(data), 65536)]  # as a pipe delivers them
out = {}
for keep in (False, True):
    start = time.process_time()
    t = Transcript.from_chunks(chunks, keep_events=keep)
    out[f"fold_{keep}"] = (time.process_time() - start) / n * 1e6
    del t
tracemalloc.start()
held = []
for keep in (False, True):
    before = tracemalloc.get_traced_memory()[0]
    t = Transcript.from_chunks(chunks, keep_events=keep)
    held.append(tracemalloc.get_traced_memory()[0] - before)
    if keep:
        tracemalloc.stop()
        start = time.process_time()
        for e in t.events:
            e.data.get("t")
        out["read"] = (time.process_time() - start) / n * 1e6
    del t
out["bytes"] = (held[1] - held[0]) / n
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="507f5df")
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        data = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline, "src"],
                              check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=data, check=True)
        sides = {args.baseline: Path(tmp) / "src", "this tree": ROOT / "src"}
        seen: dict[str, list[dict[str, float]]] = {k: [] for k in sides}
        for _ in range(args.repeats):
            order = list(sides)
            rng.shuffle(order)
            for side in order:
                env = {**os.environ, "PYTHONPATH": str(sides[side])}
                out = subprocess.run([sys.executable, "-c", CHILD, str(args.lines)], env=env,
                                     check=True, capture_output=True, text=True).stdout
                seen[side].append(json.loads(out))
    print(f"{args.lines:,} delta lines, median of {args.repeats}")
    print(f"{'side':12s} {'kept bytes/event':>16s} {'fold µs/line keep=False':>24s} "
          f"{'keep=True':>10s} {'read µs/event':>14s}")
    for side, runs in seen.items():
        def med(key: str, runs: list[dict[str, float]] = runs) -> float:
            return statistics.median(r[key] for r in runs)
        print(f"{side:12s} {med('bytes'):16.0f} {med('fold_False'):24.2f} "
              f"{med('fold_True'):10.2f} {med('read'):14.2f}")


if __name__ == "__main__":
    main()
