"""The simulator's planner on crafted prompts: the patterns it used (baseline) against the
linear readings that replaced them (review fix of 2026-11-24), side by side in one process.

Run: ``.venv/bin/python bench/bench_planner.py [--repeats N]``

Each row times one reading on one prompt: the old pattern's ``re.search`` and the new
function, medians of the repeats. Growth per doubling of the prompt shows the shape (×4:
quadratic; ×2: linear). Never run as a test: figures depend on the machine; BENCHMARKS.md
records them.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections.abc import Callable

from cursor_agent_api.sim import planner

OLD_REPLACE = re.compile(
    r"\breplace\s+(.+?)\s+with\s+(.+?)\s+in\s+(?:the\s+file\s+)?([\w./-]+\.\w+)", re.I | re.S
)
OLD_ARITHMETIC = re.compile(r"(-?\d+(?:\.\d+)?)\s*([-+*/x×])\s*(-?\d+(?:\.\d+)?)")
OLD_FILE = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.[A-Za-z0-9]{1,8})(?![\w/-])")
"""The file pattern before it read ``../`` and absolute paths (wave 11): linear, and the new one
must stay so."""
OLD_SAY = re.compile(r"\b(?:say|respond\s+with|answer\s+with|reply\s+with)\s*:?\s*(.+?)\s*$", re.I | re.S)

Reading = Callable[[str], object]
CASES: list[tuple[str, Callable[[int], str], Reading, Reading, tuple[int, ...]]] = [
    ("replace a with b in c (×n)", lambda n: "replace " + "a with b in c " * n,
     OLD_REPLACE.search, planner._replace_parts, (500, 1000, 2000)),
    ("checksum + n digits", lambda n: "checksum " + "7" * n,
     OLD_ARITHMETIC.search, planner._ARITHMETIC.search, (2000, 4000, 8000)),
    ("replace + n spaces", lambda n: "replace" + " " * n + "x",
     OLD_REPLACE.search, planner._replace_parts, (200, 400, 800)),
    ("say x + n spaces + y", lambda n: "say x" + " " * n + "y",
     OLD_SAY.search, lambda p: planner._rest_of(planner._SAY, p), (4000, 8000, 16000)),
    ("file names: read + ../ (×n)", lambda n: "read " + "../" * n,
     OLD_FILE.findall, planner._FILE.findall, (20000, 40000, 80000)),
    ("file names: read + /a.aaaaaaaaa (×n)", lambda n: "read " + "/a.aaaaaaaaa" * n,
     OLD_FILE.findall, planner._FILE.findall, (5000, 10000, 20000)),
    ("file names: read + x.txt (×n)", lambda n: "read " + "x.txt " * n,
     OLD_FILE.findall, planner._FILE.findall, (5000, 10000, 20000)),
]


def median_ms(fn: Callable[[str], object], prompt: str, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(prompt)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="", help="run only the rows whose name starts with this")
    args = parser.parse_args()
    print("| prompt | characters | before (old pattern) | after | before / after |")
    print("|---|---:|---:|---:|---:|")
    for name, make, old, new, sizes in (c for c in CASES if c[0].startswith(args.only)):
        for n in sizes:
            prompt = make(n)
            before = median_ms(old, prompt, args.repeats)
            after = median_ms(new, prompt, args.repeats)
            ratio = before / max(after, 1e-6)
            shown = f"{ratio:,.2f}" if ratio < 10 else f"{ratio:,.0f}"
            row = f"| {name} | {len(prompt):,} | {before:,.2f} ms | {after:,.3f} ms | {shown} |"
            print(row, flush=True)


if __name__ == "__main__":
    main()
