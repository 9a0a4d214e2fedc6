"""CPU of one start of the command line and of the simulator, two ``src/`` trees side by side.

The test suite starts ``cursor-agent-api`` hundreds of times and ``cursor-agent-sim``
close to a thousand, and a user feels the command's start on each ``--help``, ``replay``,
``sessions``; most of that is imports. This runs, for each tree, in turn (the order
alternating from one round to the next, so both share the machine's noise):

* ``cursor-agent-api --help``;
* ``cursor-agent-api replay`` of a recording of tests/data;
* ``cursor-agent-api sessions list`` (no saved chat);
* ``cursor-agent-api run --simulate -o ndjson`` (a piped run, as the suite's);
* one print-mode turn of ``cursor-agent-sim -p --output-format stream-json``;
* ``serve`` and ``worker`` refusing a wrong option (a usage error, exit 2: a port out of
  range, a short token, a database URL of another kind, a heartbeat too long, an agent that
  is not there), which should be said before the server is imported;

and reports, per start, the median user+sys CPU of the process itself (``getrusage`` in
the process, at exit: the interpreter's start included) and, for ``run``, with the
simulator it started; and the median wall time of each start (the process's, as its
parent waits for it). ``--only refusals`` runs the refusals alone. Both
trees get compiled bytecode first (a cache of their own under a temporary
``PYTHONPYCACHEPREFIX``, one warm-up start each), so neither pays for compiling.

    .venv/bin/python bench/bench_cli_start.py --baseline /work/main/src --change src -n 30
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
RECORDING = HERE / "tests/data/cursor-real/02-hcn-0915-probe-43-partial-output-with-read-tool.ndjson"

# Runs module argv[2] as ``python -m`` would with the arguments after it; at exit (atexit
# runs on sys.exit and SystemExit) writes the process's own user+sys CPU to file argv[1].
WRAPPER = """
import atexit, resource, runpy, sys
def _report(path=sys.argv[1]):
    r = resource.getrusage(resource.RUSAGE_SELF)
    with open(path, "w") as f:
        f.write(repr(r.ru_utime + r.ru_stime))
atexit.register(_report)
module = sys.argv[2]
sys.argv = [module, *sys.argv[3:]]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""

CASES = {
    "cursor-agent-api --help": ["cursor_agent_api.cli", "--help"],
    "cursor-agent-api replay FILE": ["cursor_agent_api.cli", "replay", str(RECORDING)],
    "cursor-agent-api sessions list": ["cursor_agent_api.cli", "sessions", "list"],
    "cursor-agent-api run --simulate": ["cursor_agent_api.cli", "run", "--simulate", "--trust",
                                        "-o", "ndjson", "hello"],
    "cursor-agent-sim -p (one turn)": ["cursor_agent_api.sim", "-p", "--trust",
                                       "--output-format", "stream-json", "hello"],
}

QUEUE_DB = "postgresql+asyncpg://nobody@127.0.0.1:9/nowhere"  # refused before it is opened
REFUSALS = {  # each a usage error: exit 2
    "serve --port 99999": ["cursor_agent_api.cli", "serve", "--port", "99999"],
    "serve --token short": ["cursor_agent_api.cli", "serve", "--token", "short"],
    "serve --database-url mysql://x": ["cursor_agent_api.cli", "serve", "--database-url",
                                       "mysql://x"],
    "worker --heartbeat 31": ["cursor_agent_api.cli", "worker", "--database-url", QUEUE_DB,
                              "--heartbeat", "31"],
    "worker --agent-binary /no/such/agent": ["cursor_agent_api.cli", "worker", "--database-url",
                                             QUEUE_DB, "--agent-binary", "/no/such/agent"],
}


def _start(argv: list[str], env: dict[str, str], cwd: str, report: Path, *, code: int = 0
           ) -> tuple[float, float, float]:
    """One start, which must exit with ``code``: (the process's own CPU, with its
    children's, its wall time), in seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", WRAPPER, str(report), *argv], env=env, cwd=cwd,
                          check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - began
    if done.returncode != code:
        raise SystemExit(f"{argv}: exit {done.returncode}, not {code}: {done.stderr[-500:]!r}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return float(report.read_text()), total, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="the src/ of the code before")
    parser.add_argument("--change", default=str(HERE / "src"), help="the src/ of the change")
    parser.add_argument("-n", type=int, default=30, help="starts of each command, each tree")
    parser.add_argument("--only", choices=["all", "starts", "refusals"], default="all",
                        help="the commands' starts, the refusals, or both")
    args = parser.parse_args()
    trees = {"baseline": str(Path(args.baseline).resolve()),
             "change": str(Path(args.change).resolve())}
    cases = {**(CASES if args.only != "refusals" else {}),
             **(REFUSALS if args.only != "starts" else {})}
    own: dict[tuple[str, str], list[float]] = {(t, c): [] for t in trees for c in cases}
    total: dict[tuple[str, str], list[float]] = {(t, c): [] for t in trees for c in cases}
    walls: dict[tuple[str, str], list[float]] = {(t, c): [] for t in trees for c in cases}
    with tempfile.TemporaryDirectory() as tmp:
        envs = {}
        for tree, src in trees.items():
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("CURSOR_AGENT_SIM_", "PYTHONDONTWRITEBYTECODE",
                                        "CURSOR_AGENT_API_TOKEN", "CURSOR_AGENT_API_DATABASE"))}
            env.update(PYTHONPATH=src, PYTHONPYCACHEPREFIX=f"{tmp}/pycache-{tree}",
                       CURSOR_CONFIG_DIR=f"{tmp}/config-{tree}", CURSOR_API_KEY="bench",
                       CURSOR_AGENT_API_HOME=f"{tmp}/home-{tree}", NO_COLOR="1")
            envs[tree] = env
        report = Path(tmp) / "cpu"
        for rnd in range(-1, args.n):  # round -1: the warm-up (writes the bytecode), not kept
            for case, argv in cases.items():
                order = list(trees) if rnd % 2 == 0 else list(reversed(trees))
                for tree in order:
                    ws = Path(tmp) / f"ws-{tree}-{rnd}"
                    ws.mkdir(exist_ok=True)
                    mine, with_children, wall = _start(argv, envs[tree], str(ws), report,
                                                       code=2 if case in REFUSALS else 0)
                    if rnd >= 0:
                        own[(tree, case)].append(mine)
                        total[(tree, case)].append(with_children)
                        walls[(tree, case)].append(wall)
    print(f"median per start, ms ({args.n} starts of each; "
          f"baseline {trees['baseline']}, change {trees['change']})")
    print(f"{'command':44} {'CPU base':>9} {'change':>9} {'ratio':>6} {'wall base':>10} "
          f"{'change':>9} {'ratio':>6}")
    for case in cases:
        rows = [("", own)]
        if "run" in case:
            rows.append((" + its simulator", total))
        for suffix, figures in rows:
            base = statistics.median(figures[("baseline", case)])
            new = statistics.median(figures[("change", case)])
            wall_base = statistics.median(walls[("baseline", case)])
            wall_new = statistics.median(walls[("change", case)])
            print(f"{case + suffix:44} {base * 1000:9.0f} {new * 1000:9.0f} {new / base:6.2f} "
                  f"{wall_base * 1000:10.0f} {wall_new * 1000:9.0f} {wall_new / wall_base:6.2f}")


if __name__ == "__main__":
    main()
