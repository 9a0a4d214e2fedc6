"""Start-up of the simulator (and of any program that imports one part of the package),
this checkout against an older ``src/``, side by side.

Each repeat runs every command once with each side's ``src`` on ``PYTHONPATH``, in turn, so
both share the machine's noise; the figures are medians over the repeats. The simulator is
started by the test suite hundreds of times (every client, CLI and server test that runs a
turn), so its start-up is part of the suite's time.

    git archive 1dc8888 src | tar -x -C /tmp/base1dc
    .venv/bin/python bench/bench_startup.py --before-src /tmp/base1dc/src --repeats 15
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

COMMANDS = {
    "import cursor_agent_api.sim": ["-c", "import cursor_agent_api.sim"],
    "a simulated turn (start to exit)": [
        "-m", "cursor_agent_api.sim", "-p", "hi", "--output-format", "stream-json", "--force",
    ],
    "import cursor_agent_api.protocol": ["-c", "import cursor_agent_api.protocol"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before-src", required=True, help="the src/ of the code before")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    sides = {"before": args.before_src, "after": str(HERE / "src")}
    times: dict[tuple[str, str], list[float]] = {(s, c): [] for s in sides for c in COMMANDS}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeats):
            for name, argv in COMMANDS.items():
                for side, src in sides.items():
                    env = dict(os.environ, PYTHONPATH=src, CURSOR_CONFIG_DIR=tmp)
                    t0 = time.perf_counter()
                    subprocess.run([sys.executable, *argv], env=env, cwd=tmp, check=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    times[(side, name)].append(time.perf_counter() - t0)
    print(f"{'command':40} {'before ms':>10} {'after ms':>10} {'after/before':>13}")
    for name in COMMANDS:
        before = statistics.median(times[("before", name)])
        after = statistics.median(times[("after", name)])
        print(f"{name:40} {before * 1000:10.0f} {after * 1000:10.0f} {after / before:13.2f}")


if __name__ == "__main__":
    main()
