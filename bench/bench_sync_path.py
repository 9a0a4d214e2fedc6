"""The sync stream against a bare ``Popen`` + ``readline`` loop: old and new code interleaved.

Run: ``.venv/bin/python bench/bench_sync_path.py [--baseline REV ...] [--repeats N]``

Built for a small, noisy machine (2 cores shared with other work). Each measurement is one
fresh interpreter running one side on the stand-in agent of ``bench_client.py`` (lines carry
the writer's ``time.monotonic_ns()``, a clock shared by all processes on Linux):

* **latency**: ``--lines`` lines written 1 ms apart; per line, the consumer's receive time
  minus the writer's timestamp; the run's p50 and p99;
* **throughput**: events/s from the first event to the last of a ``--tput``-line stream
  written as fast as the pipe takes it;
* **CPU per line**: user + system CPU time of the consumer's process (all its threads, not
  the agent's) over the latency run, per line: the instructions a line costs with cold
  caches, which the machine's load moves much less than the wall-clock percentiles.

Within each repeat every side runs once, in a shuffled order: the bare loop, the
``query_stream`` of this working tree (``--flavour``: sync or async, ``keep_events`` True or
False; the async face is the core without the thread hop, for context), and of each
``--baseline`` revision (its ``src`` from
``git archive``, through ``PYTHONPATH``; default ``4d86a18``, the last "pull mode" sync
stream with its second stdout reader in the consumer's thread). Each figure is divided by the
bare loop's figure *of the same repeat*, and the table gives the median of those ratios over
the repeats, with their interquartile range: the load moves the bare loop and the client
together, so the ratio is steadier than either. ``--switchinterval S`` adds this tree's first
flavour with ``sys.setswitchinterval(S)`` set in its interpreter: a measure of what the GIL's
hand-over costs, not a setting the client makes. ``--stages`` instead times the stages of
a line's path in this tree's loop (framing, parsing, folding, the hand-off). ``--patch FILE``
adds this tree with a diff applied (``patch -p1`` onto a copy of ``src``) for each flavour: a
prototype is judged without being committed. Never run as a test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CHILD = r"""
import json, resource, sys, tempfile
sys.path.insert(0, {bench!r})
import bench_client as b
flavour, n_lat, n_tput, interval = {flavour!r}, {n_lat}, {n_tput}, {interval!r}
if interval is not None:
    sys.setswitchinterval(interval)
keep = flavour.endswith("keep_events=True")
fn = b.bare if flavour == "bare" else (
    (lambda a, m, n: b.client_async(a, m, n, keep)) if flavour.startswith("async") else
    (lambda a, m, n: b.client_sync(a, m, n, keep)))
with tempfile.TemporaryDirectory() as tmp:
    agent = b.make_stand_in(tmp)
    fn(agent, "throughput", 2000)  # warm: imports, first spawn
    before = resource.getrusage(resource.RUSAGE_SELF)
    lat = fn(agent, "latency", n_lat)[0]
    after = resource.getrusage(resource.RUSAGE_SELF)
    rate = fn(agent, "throughput", n_tput)[1]
cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / n_lat * 1e6
print(json.dumps([b.pct(lat, 50) / 1e3, b.pct(lat, 99) / 1e3, rate, cpu]))
"""

STAGES_CHILD = r"""
import collections, json, sys, tempfile, time
sys.path.insert(0, {bench!r})
import bench_client as b
from cursor_agent_api.protocol import framing, reader, transcript
from cursor_agent_api.runtime import process, run, sinks
flavour, n_lat, stages = {flavour!r}, {n_lat}, {stages!r}
keep = flavour.endswith("keep_events=True")
spent = collections.Counter()
clock = time.perf_counter_ns

def wrap(owner, name, label):
    inner = getattr(owner, name)
    def timed(*args, **kwargs):
        start = clock()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[label] += clock() - start
    setattr(owner, name, timed)

modules = {{"framing": framing, "reader": reader, "transcript": transcript, "run": run,
           "process": process, "sinks": sinks}}
for owner, name, label in stages:
    module, cls = owner.split(".")
    wrap(getattr(modules[module], cls), name, label)
fn = ((lambda a, m, n: b.client_async(a, m, n, keep)) if flavour.startswith("async") else
      (lambda a, m, n: b.client_sync(a, m, n, keep)))
with tempfile.TemporaryDirectory() as tmp:
    agent = b.make_stand_in(tmp)
    fn(agent, "throughput", 2000)
    spent.clear()
    fn(agent, "latency", n_lat)
print(json.dumps({{label: spent[label] / n_lat / 1e3 for _, _, label in stages}}))
"""

PATH_CHILD = r"""
import concurrent.futures, gc, sys, time
from cursor_agent_api import AgentConfig
from cursor_agent_api.client import StreamingResponse
from cursor_agent_api.protocol import EventReader, Transcript
from cursor_agent_api.runtime.run import AgentRun
from cursor_agent_api.runtime.sinks import ThreadEventQueue
stage, n, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
line = (b'{"type":"assistant","message":{"role":"assistant","content":'
        b'[{"type":"text","text":"token "}]},"session_id":"bench","timestamp_ms":1,'
        b'"t":12345678901234}\n')
per = 65536 // len(line)
chunks = [line * per] * (n // per)

class Clock:  # the run reads only loop.time() on this path
    def time(self):
        return 0.0

full = [0, 0.0]  # full collections during a run: count, seconds
def on_gc(phase, info, began=[0.0]):
    if info["generation"] == 2:
        if phase == "start":
            began[0] = time.process_time()
        else:
            full[0] += 1
            full[1] += time.process_time() - began[0]
gc.callbacks.append(on_gc)

def once():
    if stage.startswith("bare"):
        kept, loads, keep = [], __import__("orjson").loads, stage.endswith("object")
        start = time.process_time()
        for chunk in chunks:
            for one in chunk.split(b"\n")[:-1]:
                obj = loads(one)
                obj.get("t")
                if keep:
                    kept.append(obj)
        return time.process_time() - start
    if stage in ("parse", "parse+fold"):
        reader, fold = EventReader(), Transcript(keep_events=False)
        start = time.process_time()
        for chunk in chunks:
            events = reader.feed(chunk)
            if stage == "parse+fold":
                for event in events:
                    fold.add(event)
        return time.process_time() - start
    config = AgentConfig(keep_events=stage.endswith("True"))
    queue = ThreadEventQueue()
    run = AgentRun(config, "p", sink=queue, argv=["x"])
    run._loop = Clock()
    stream = StreamingResponse(run, queue, config, "p", concurrent.futures.Future())
    take, transcript = stream.__next__, run.transcript
    start = time.process_time()
    for chunk in chunks:
        before = transcript.event_count
        run.stdout_data(chunk)  # what the loop does with one read
        for _ in range(transcript.event_count - before):
            take().data.get("t")  # what the consumer does with each event
    return time.process_time() - start

best = []
for _ in range(runs):
    gc.collect()
    full[:] = [0, 0.0]
    best.append((once(), *full))
lines = per * (n // per)
cpu, count, spent = min(best)
print(cpu / lines * 1e6, count, spent / lines * 1e6)
"""

PATH_STAGES = ("bare split+orjson.loads", "bare, keeping every object", "parse", "parse+fold",
               "stream keep_events=False", "stream keep_events=True")


def path_costs(sides: dict[str, Path], repeats: int, callgrind: bool) -> None:
    """The client's per-line path in one thread, without a process, a pipe or a loop: the
    reader, the fold, the hand-off and the consumer (``StreamingResponse.__next__``), on
    ``bench_client.py``'s delta lines in 64 KiB chunks. CPU µs per line (min of
    ``repeats`` runs of 100,000 lines) and, of that run, the full (generation 2) garbage
    collections and their CPU per line; with ``callgrind`` the instructions per line
    (valgrind: 30,000 lines minus 10,000, so the start-up cancels; deterministic). The two
    ``bare`` stages are the floor: ``orjson.loads`` of each line, dropped or kept."""
    print(f"{'side':12s} {'stage':28s} {'CPU µs/line':>11s} {'full GCs':>8s} "
          f"{'their µs/line':>13s}" + (f" {'instructions/line':>18s}" if callgrind else ""))
    for label, src in sides.items():
        env = {**os.environ, "PYTHONPATH": str(src), "PYTHONHASHSEED": "0"}
        for stage in PATH_STAGES:
            cpu, count, spent = (float(x) for x in subprocess.run(
                [sys.executable, "-c", PATH_CHILD, stage, "100000", str(repeats)], env=env,
                check=True, capture_output=True, text=True).stdout.split())
            row = f"{label:12s} {stage:28s} {cpu:11.2f} {count:8.0f} {spent:13.2f}"
            if callgrind:
                counts = []
                for n in (10_000, 30_000):
                    err = subprocess.run(
                        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                         sys.executable, "-c", PATH_CHILD, stage, str(n), "1"],
                        env=env, check=True, capture_output=True, text=True).stderr
                    counts.append(int(err.split("Collected :")[1].split()[0]))
                row += f" {(counts[1] - counts[0]) / 20_000:18,.0f}"
            print(row, flush=True)


STAGES = [  # (owner, attribute, label): wall time inside, per line; nested stages include inner
    ("process._StdoutProtocol", "data_received", "data_received: read to handed on (all below)"),
    ("framing.LineFramer", "feed", "  framing (LineFramer.feed)"),
    ("reader.EventReader", "feed", "  framing + parse (EventReader.feed)"),
    ("transcript.Transcript", "add", "  fold (Transcript.add)"),
    ("sinks.ThreadEventQueue", "put", "  hand-off put, sync (ThreadEventQueue.put)"),
    ("sinks.AsyncEventQueue", "put", "  hand-off put, async (AsyncEventQueue.put)"),
]


def stages(flavours: list[str], n_lat: int, repeats: int) -> None:
    """Median over ``repeats`` of the wall time per line inside each stage of the loop's path."""
    seen: dict[str, list[dict[str, float]]] = {f: [] for f in flavours}
    for _ in range(repeats):
        for flavour in flavours:
            code = STAGES_CHILD.format(bench=str(HERE), flavour=flavour, n_lat=n_lat,
                                       stages=STAGES)
            out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                 text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
            seen[flavour].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"µs per line (wall time inside, median of {repeats}), {n_lat} lines 1 ms apart")
    print(f"{'stage':50s} " + " ".join(f"{f:>24s}" for f in flavours))
    for _, _, label in STAGES:
        print(f"{label:50s} " + " ".join(
            f"{statistics.median(r[label] for r in seen[f]):24.1f}" for f in flavours))


FLAVOURS = ("sync keep_events=True", "sync keep_events=False", "async keep_events=True",
            "async keep_events=False")


def run_one(src: Path, flavour: str, n_lat: int, n_tput: int,
            interval: float | None = None) -> list[float]:
    """[p50 µs, p99 µs, events/s, CPU µs per line] of one side in a fresh interpreter."""
    code = CHILD.format(bench=str(HERE), flavour=flavour, n_lat=n_lat, n_tput=n_tput,
                        interval=interval)
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def archive(rev: str, tmp: Path) -> Path:
    """``rev``'s ``src`` (``git archive``) under ``tmp``; its path."""
    dest = tmp / rev
    dest.mkdir()
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"],
                          check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=data, check=True)
    return dest / "src"


def quartiles(values: list[float]) -> tuple[float, float, float]:
    """(first quartile, median, third quartile)."""
    if len(values) < 2:
        return values[0], values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[1], q[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", action="append", default=None,
                        help="a git revision to compare (repeatable; default 4d86a18)")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--lines", type=int, default=1000, help="latency lines (1 ms apart)")
    parser.add_argument("--tput", type=int, default=100_000, help="throughput lines")
    parser.add_argument("--flavour", choices=FLAVOURS, action="append", default=None)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--switchinterval", type=float, default=None,
                        help="also run this tree's first flavour with sys.setswitchinterval(S) "
                             "in its interpreter (a measure only: the client never sets it)")
    parser.add_argument("--stages", action="store_true",
                        help="instead: where the time of a line goes in this tree's loop "
                             "(wall time inside each stage, per line)")
    parser.add_argument("--patch", type=Path, action="append", default=[],
                        help="also run this tree with this diff applied (repeatable)")
    parser.add_argument("--path", action="store_true",
                        help="instead: the per-line path in one thread (reader, fold, hand-off, "
                             "consumer; no process) of this tree and each --baseline: CPU µs "
                             "per line, min of --repeats runs")
    parser.add_argument("--callgrind", action="store_true",
                        help="with --path: also the instructions per line, under valgrind")
    args = parser.parse_args()
    baselines = args.baseline or ["4d86a18"]
    flavours = args.flavour or [FLAVOURS[0]]
    rng = random.Random(args.seed)
    if args.stages:
        stages(flavours, args.lines, args.repeats)
        return
    if args.path:
        with tempfile.TemporaryDirectory() as tmp:
            srcs = {rev: archive(rev, Path(tmp)) for rev in baselines}
            srcs["this tree"] = ROOT / "src"
            path_costs(srcs, args.repeats, args.callgrind)
        return
    with tempfile.TemporaryDirectory() as tmp:
        sides: dict[str, tuple[Path, str, float | None]] = {
            "bare": (ROOT / "src", "bare", None)}
        for rev in baselines:
            src = archive(rev, Path(tmp))
            for flavour in flavours:
                sides[f"{rev} {flavour}"] = (src, flavour, None)
        for flavour in flavours:
            sides[f"this tree {flavour}"] = (ROOT / "src", flavour, None)
        for patch in args.patch:
            dest = Path(tmp) / f"patch-{patch.stem}"
            shutil.copytree(ROOT / "src", dest / "src",
                            ignore=shutil.ignore_patterns("__pycache__"))
            subprocess.run(["patch", "-s", "-p1", "-d", str(dest), "-i", str(patch.resolve())],
                           check=True)
            for flavour in flavours:
                sides[f"+{patch.stem} {flavour}"] = (dest / "src", flavour, None)
        if args.switchinterval is not None:
            sides[f"this tree {flavours[0]}, switch {args.switchinterval:g} s"] = (
                ROOT / "src", flavours[0], args.switchinterval)
        runs: dict[str, list[list[float]]] = {k: [] for k in sides}
        loads: list[float] = []
        for i in range(args.repeats):
            order = list(sides)
            rng.shuffle(order)
            for label in order:
                src, flavour, interval = sides[label]
                runs[label].append(run_one(src, flavour, args.lines, args.tput, interval))
            loads.append(os.getloadavg()[0])
            print(f"repeat {i + 1}/{args.repeats} done, load {loads[-1]:.1f}", file=sys.stderr)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, repeats={args.repeats}, "
          f"load average {min(loads):.1f}-{max(loads):.1f}; {args.lines} latency lines 1 ms "
          f"apart, {args.tput:,} throughput lines; ratios to the bare loop of the same repeat, "
          "median [interquartile range]")
    print(f"{'side':50s} {'p50 µs':>7s} {'p50 x bare':>18s} {'p99 µs':>8s} "
          f"{'p99 x bare (<=1.5)':>19s} {'events/s':>9s} {'x bare (>=0.25)':>18s} "
          f"{'CPU µs/line':>11s} {'x bare':>18s}")
    bare = runs["bare"]
    for label, results in runs.items():
        cols = []
        for k in range(4):
            absolute = statistics.median(r[k] for r in results)
            q1, med, q3 = quartiles([r[k] / b[k] for r, b in zip(results, bare, strict=True)])
            cols.append(f"{absolute:9,.1f} {med:5.2f} [{q1:4.2f}-{q3:4.2f}]")
        print(f"{label:50s} " + "  ".join(cols))


if __name__ == "__main__":
    main()
