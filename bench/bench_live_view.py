"""``run``'s live terminal view beside a pipe, on one long streamed line and one long thinking
block (audit 8: 8,000 deltas of one line took 10.9 s at a terminal, 0.5 s in a pipe).

Run: ``.venv/bin/python bench/bench_live_view.py [--baseline REV] [--repeats N] [--sizes 2000,8000]``

A stand-in agent (written to a temporary folder) writes, all at once, the init line, N
``assistant`` deltas of one line (``w<i> yyyy ``, no newline) or N ``thinking`` deltas, then
the final message and the result: no agent time, only the command line's. Each measurement
is the wall time of one ``cursor-agent-api run --agent-binary …`` until it exits: under a
pseudo-terminal (120 columns, its output read and thrown away: the live view), and with
stdout and stderr on a pipe (the text view). With ``--baseline REV``, the same with the
code of ``REV`` (its ``src`` from ``git archive``, through ``PYTHONPATH``). Each repeat runs
every contender once, in a shuffled order; the table gives medians over the repeats and the
terminal/pipe ratio of the medians. Never run as a test.
"""

from __future__ import annotations

import argparse
import os
import pty
import random
import select
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

AGENT = r'''
import json, os, sys
sid = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
mode, n = os.environ["BENCH_MODE"], int(os.environ["BENCH_N"])
def out(o): sys.stdout.write(json.dumps(o) + "\n")
sys.stdin.read()
out({"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": sid, "model": "M"})
full = "ok"
if mode == "think":
    for i in range(n):
        out({"type": "thinking", "subtype": "delta", "text": "t%d xxxx " % i, "session_id": sid,
             "timestamp_ms": 1})
    out({"type": "thinking", "subtype": "completed", "session_id": sid, "timestamp_ms": 2})
else:
    pieces = ["w%d yyyy " % i for i in range(n)]
    full = "".join(pieces)
    for i, piece in enumerate(pieces):
        out({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": piece}]}, "session_id": sid, "timestamp_ms": 3 + i})
out({"type": "assistant", "message": {"role": "assistant", "content": [
    {"type": "text", "text": full}]}, "session_id": sid})
out({"type": "result", "subtype": "success", "is_error": False, "duration_ms": 10,
     "duration_api_ms": 10, "result": full, "session_id": sid, "request_id": "r"})
sys.stdout.flush()
'''


def _at_a_terminal(cmd: list[str], env: dict[str, str], cwd: str) -> float:
    started = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # the child: a 120-column terminal
        import fcntl
        import struct
        import termios

        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        os.chdir(cwd)
        os.execvpe(cmd[0], cmd, env)
    while True:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if ready:
            try:
                if not os.read(fd, 65536):
                    break
            except OSError:  # EIO: the child closed the terminal
                break
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    took = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:  # a failed run is no figure (as the pipe's)
        raise SystemExit(f"the run at a terminal failed: exit {os.waitstatus_to_exitcode(status)}")
    return took


def _in_a_pipe(cmd: list[str], env: dict[str, str], cwd: str) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                   check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="a git revision to measure beside this tree")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sizes", default="2000,8000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="bench-live-"))
    agent = work / "agent.py"
    agent.write_text(f"#!{sys.executable}\n{AGENT}")
    agent.chmod(0o755)
    trees = {"this tree": str(ROOT / "src")}
    if args.baseline:
        archive = work / "baseline.tar"
        subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), args.baseline,
                        "src"], check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(work / "baseline", filter="data")
        trees = {f"baseline {args.baseline}": str(work / "baseline" / "src"), **trees}
    ws = work / "ws"
    ws.mkdir()
    cmd = [sys.executable, "-m", "cursor_agent_api", "run", "--agent-binary", str(agent),
           "--trust", "hi"]
    times: dict[tuple[str, str, int, str], list[float]] = {}
    for _ in range(args.repeats):
        runs = [(tree, mode, n, where) for tree in trees for mode in ("deltas", "think")
                for n in sizes for where in ("terminal", "pipe")]
        random.shuffle(runs)
        for i, (tree, mode, n, where) in enumerate(runs):
            # a home of its own: the runs share no saved chat growing turn by turn (review 46)
            home = work / f"home-{len(times)}-{i}-{random.getrandbits(32):08x}"
            env = {**os.environ, "PYTHONPATH": trees[tree], "BENCH_MODE": mode,
                   "BENCH_N": str(n), "CURSOR_AGENT_API_HOME": str(home),
                   "TERM": "xterm-256color"}
            env.pop("NO_COLOR", None)
            measure = _at_a_terminal if where == "terminal" else _in_a_pipe
            times.setdefault((tree, mode, n, where), []).append(measure(cmd, env, str(ws)))
    print(f"medians of {args.repeats} repeats (s)\n")
    print("| code | stream | deltas | terminal | pipe | terminal / pipe |")
    print("|---|---|---:|---:|---:|---:|")
    for tree in trees:
        for mode in ("deltas", "think"):
            for n in sizes:
                term = statistics.median(times[(tree, mode, n, "terminal")])
                pipe = statistics.median(times[(tree, mode, n, "pipe")])
                what = "one answer line" if mode == "deltas" else "one thinking block"
                print(f"| {tree} | {what} | {n:,} | {term:.2f} | {pipe:.2f} | {term / pipe:.2f}× |")


if __name__ == "__main__":
    main()
