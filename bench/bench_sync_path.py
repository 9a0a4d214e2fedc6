"""The sync stream before and after issue 13's one-stdout-path change, side by side in one run.

Run: ``.venv/bin/python bench/bench_sync_path.py [--baseline REV] [--repeats N]``

``bench_client.py`` measures the client against a bare ``Popen`` + ``readline`` loop; this
driver runs its sync flavours (and the bare loop) from two copies of the package in turn,
within each repeat: the working tree, and ``--baseline`` (a git revision, default
``4d86a18``: the last commit with the sync stream's "pull mode", a second stdout reader in
the consumer's thread). Each side runs in its own interpreter, with ``PYTHONPATH`` at its
``src``; medians over the repeats, each ratio against the bare loop of the same interpreter.
Never run as a test: figures depend on the machine; BENCHMARKS.md records them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CHILD = r"""
import json, sys, tempfile
sys.path.insert(0, {bench!r})
import bench_client as b
n_lat, n_tput = {n_lat}, {n_tput}
with tempfile.TemporaryDirectory() as tmp:
    agent = b.make_stand_in(tmp)
    out = {{}}
    for name, fn in [("bare", b.bare),
                     ("sync keep_events=True", lambda a, m, n: b.client_sync(a, m, n, True)),
                     ("sync keep_events=False", lambda a, m, n: b.client_sync(a, m, n, False))]:
        lat = fn(agent, "latency", n_lat)[0]
        rate = fn(agent, "throughput", n_tput)[1]
        out[name] = [b.pct(lat, 50) / 1e3, b.pct(lat, 99) / 1e3, rate]
print(json.dumps(out))
"""


def run_side(src: Path, n_lat: int, n_tput: int) -> dict[str, list[float]]:
    code = CHILD.format(bench=str(HERE), n_lat=n_lat, n_tput=n_tput)
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="4d86a18")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--lines", type=int, default=1000, help="latency lines (1 ms apart)")
    parser.add_argument("--tput", type=int, default=100_000, help="throughput lines")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline, "src"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        sides = {f"before ({args.baseline})": base / "src", "after (working tree)": ROOT / "src"}
        runs: dict[str, list[dict[str, list[float]]]] = {k: [] for k in sides}
        for _ in range(args.repeats):
            for label, src in sides.items():
                runs[label].append(run_side(src, args.lines, args.tput))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, repeats={args.repeats}, "
          f"{args.lines} latency lines 1 ms apart, {args.tput} throughput lines")
    print("side / flavour                               p50 µs (x bare)   p99 µs (x bare)   "
          "events/s (x bare)")
    for label, results in runs.items():
        def med(name: str, i: int, results: list[dict[str, list[float]]] = results) -> float:
            return statistics.median(r[name][i] for r in results)

        b50, b99, brate = med("bare", 0), med("bare", 1), med("bare", 2)
        for name in results[0]:
            p50, p99, rate = med(name, 0), med(name, 1), med(name, 2)
            print(f"{label:22s} {name:22s} {p50:7.1f} ({p50 / b50:4.2f}x)  "
                  f"{p99:7.1f} ({p99 / b99:4.2f}x)  {rate:10,.0f} ({rate / brate:4.2f})")


if __name__ == "__main__":
    main()
